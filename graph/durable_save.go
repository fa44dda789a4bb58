package graph

import (
	"bytes"
	"errors"

	"github.com/trellis-agents/trellis/checkpoint"
)

// savedWrites is what the last save of a task's pending writes stored
// under checkpoint cp, so that the next save, when it only adds a durable
// step, appends that one write (checkpoint.WriteAppender) instead of
// rewriting them all: a step is then one row, not O(steps) rows.
type savedWrites struct {
	cp string
	ws []checkpoint.PendingWrite
}

// appendable records ws as the task's saved writes under checkpoint cp and
// returns the writes a save must add when ws is the writes saved last
// plus new ones at the end (nil otherwise: the save replaces them all).
// Only tasks with durable steps are tracked.
func (in *taskInterrupts) appendable(cp string, ws []checkpoint.PendingWrite) []checkpoint.PendingWrite {
	if in == nil || len(in.steps) == 0 {
		if in != nil {
			in.saved = savedWrites{}
		}
		return nil
	}
	prev := in.saved
	in.saved = savedWrites{cp: cp, ws: ws}
	if prev.cp != cp || len(prev.ws) == 0 || len(ws) <= len(prev.ws) {
		return nil
	}
	for i, w := range prev.ws {
		n := ws[i]
		if n.Index != w.Index || n.Key != w.Key || !bytes.Equal(n.Value, w.Value) {
			return nil
		}
	}
	return ws[len(prev.ws):]
}

// putWrites stores a task's pending writes: added alone when the saver
// can append them to those stored (see appendable), all of ws otherwise.
func (r *run) putWrites(ref checkpoint.Ref, taskID string, ws, added []checkpoint.PendingWrite) error {
	if len(added) > 0 {
		if a, ok := r.cfg.saver.(checkpoint.WriteAppender); ok {
			err := a.AppendWrites(r.ctx, ref, taskID, added)
			if err == nil || !(errors.Is(err, errors.ErrUnsupported) || errors.Is(err, checkpoint.ErrConflict)) {
				return err
			}
			// the saver cannot append here, or holds other writes than
			// the run thinks: replace them all
		}
	}
	if m, ok := r.cfg.saver.(*checkpoint.Memory); ok {
		// Only Memory itself (see putNow); the values were encoded for
		// this task's writes and are never changed.
		return m.PutWritesOwned(r.ctx, ref, taskID, ws)
	}
	return r.cfg.saver.PutWrites(r.ctx, ref, taskID, ws)
}
