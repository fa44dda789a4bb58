package runs

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/db"
)

// EventDiscarded names the event a run taken over logs first: the message
// IDs whose token chunks the dead worker streamed but whose messages are
// not in the thread's saved state. The node that was writing them runs
// again and streams its message under a new ID; a client drops the
// partial ones.
const EventDiscarded = "discarded"

// Discarded is the data of an EventDiscarded event.
type Discarded struct {
	MessageIDs []string `json:"message_ids"`
	Reason     string   `json:"reason"`
}

// discardPartials logs EventDiscarded for the partial messages of the
// run's earlier attempts, if any. snap is the thread's saved state (nil
// when it has none).
func (s *Service) discardPartials(ctx context.Context, log *eventLog, lease db.Lease, snap *graph.Snapshot) error {
	evs, err := s.cfg.DB.ReadEvents(ctx, lease.Tenant, lease.RunID, 0, 0)
	if err != nil {
		return err
	}
	var streamed []string
	for _, ev := range evs {
		if !isChunk(ev.Event) {
			continue
		}
		var tuple []json.RawMessage
		var chunk struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(ev.Data, &tuple) != nil || len(tuple) == 0 || json.Unmarshal(tuple[0], &chunk) != nil || chunk.ID == "" {
			continue
		}
		if !slices.Contains(streamed, chunk.ID) {
			streamed = append(streamed, chunk.ID)
		}
	}
	if len(streamed) == 0 {
		return nil
	}
	// Saved: in the state, or written by a task that finished (its writes
	// are applied when the step commits; it does not run again).
	saved := map[string]bool{}
	if snap != nil {
		values, err := s.cfg.Wire.State(snap.Values)
		if err != nil {
			return err
		}
		for _, id := range messageIDs(values) {
			saved[id] = true
		}
		for _, t := range snap.Tasks {
			if !t.Finished {
				continue
			}
			u, err := s.cfg.Wire.Update(t.Writes)
			if err != nil {
				return err
			}
			for _, id := range messageIDs(u) {
				saved[id] = true
			}
		}
	}
	var lost []string
	for _, id := range streamed {
		if !saved[id] {
			lost = append(lost, id)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	b, err := json.Marshal(Discarded{MessageIDs: lost, Reason: "the run was taken over after its worker stopped; these messages were cut off and are streamed again under new IDs"})
	if err != nil {
		return err
	}
	log.add(ctx, EventDiscarded, b)
	return nil
}

// messageIDs returns the IDs of the messages under "messages" in a state
// or update object; none when it has no such list.
func messageIDs(obj json.RawMessage) []string {
	var v struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	if json.Unmarshal(obj, &v) != nil {
		return nil
	}
	ids := make([]string, 0, len(v.Messages))
	for _, m := range v.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}
