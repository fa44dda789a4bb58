package sqlcore

import (
	"context"
	"encoding/json"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// FinishRunWithResult is FinishRun and SetThreadResult of the run's thread
// in one transaction, fenced by the lease: a worker that lost the run
// records neither. The transaction runs ctx's internal/txhook end hook
// before it commits (the run queue completes the run's job in it).
func (s *Store) FinishRunWithResult(ctx context.Context, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, db.Pending, error) {
	u, err := checkFinish(status, usage)
	if err != nil {
		return db.Run{}, db.Thread{}, db.Pending{}, err
	}
	var f finished
	err = s.d.Write(ctx, func(tx Conn) error {
		tr, err := newThreadResult(r)
		if err != nil {
			return err
		}
		if f, err = s.finishWithResult(ctx, tx, l, status, u, errMsg, tr); err != nil {
			return err
		}
		// What ends with the run commits with it: the queue's job, the
		// run's online evaluator samples.
		return txhook.RunEndOf(ctx, s.d.Unwrap(tx), f.run)
	})
	if err != nil {
		return db.Run{}, db.Thread{}, db.Pending{}, err
	}
	return f.run, f.thread, f.pending, nil
}
