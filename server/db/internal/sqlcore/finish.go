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
func (s *Store) FinishRunWithResult(ctx context.Context, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, error) {
	u, err := checkFinish(status, usage)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	var (
		run db.Run
		th  db.Thread
	)
	err = s.d.Write(ctx, func(tx Conn) error {
		tr, err := newThreadResult(r)
		if err != nil {
			return err
		}
		if run, th, err = s.finishWithResult(ctx, tx, l, status, u, errMsg, tr); err != nil {
			return err
		}
		// What ends with the run commits with it: the queue's job, the
		// run's online evaluator samples.
		return txhook.RunEndOf(ctx, s.d.Unwrap(tx), run)
	})
	return run, th, err
}
