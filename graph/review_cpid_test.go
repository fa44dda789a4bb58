package graph_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// uuidV7At is a UUIDv7 checkpoint ID stamped at t (sequence 0, random bits
// fixed), as another process with a clock ahead of this one's would make.
func uuidV7At(t time.Time) string {
	var u [16]byte
	ms := t.UnixMilli()
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6], u[8] = 0x70, 0x80
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// A thread whose latest checkpoint was saved by a process whose clock ran
// ahead (another replica, or this host before its clock stepped back)
// goes on: the run's checkpoint IDs sort after the head it read, as every
// saver requires, instead of failing with "IDs must grow" until the clock
// catches up.
func TestCheckpointIDsSortAfterAHeadFromAClockAhead(t *testing.T) {
	ctx := context.Background()
	msgs := graph.NewKey("msgs", graph.Concat[string]())
	b := graph.New(msgs)
	b.AddNode("n", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(msgs, "n")), nil
	})
	b.SetEntry("n")
	b.AddEdge("n", graph.END)
	g := mustCompile(t, b)
	s := checkpoint.NewMemory()
	opts := []graph.RunOption{graph.WithCheckpointer(s), graph.WithThread("skew")}
	if _, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, "hi")), opts...); err != nil {
		t.Fatal(err)
	}
	// The head saved again under an ID stamped ahead, as that process did.
	// (Little ahead, and waited out at the end: the process's IDs follow
	// it, and other tests compare IDs with the clock.)
	head, err := s.Get(ctx, checkpoint.Ref{ThreadID: "skew"})
	if err != nil {
		t.Fatal(err)
	}
	cp := head.Checkpoint
	ahead := time.Now().Add(300 * time.Millisecond)
	defer func() { time.Sleep(time.Until(ahead) + 2*time.Millisecond) }()
	cp.ID = uuidV7At(ahead)
	md := head.Metadata
	md.Parent, md.Step = head.Ref.ID, md.Step+1
	if _, err := s.Put(ctx, head.Ref, cp, md); err != nil {
		t.Fatal(err)
	}
	for _, in := range []graph.Update{graph.Writes(graph.Append(msgs, "again")), nil} {
		if _, err := g.Invoke(ctx, in, opts...); err != nil {
			t.Fatalf("run after a head from a clock ahead: %v", err)
		}
	}
	latest, err := s.Get(ctx, checkpoint.Ref{ThreadID: "skew"})
	if err != nil {
		t.Fatal(err)
	}
	if latest.Ref.ID <= cp.ID {
		t.Errorf("latest %s does not sort after the head %s", latest.Ref.ID, cp.ID)
	}
}
