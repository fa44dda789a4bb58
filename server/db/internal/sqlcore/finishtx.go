package sqlcore

import (
	"context"
	"encoding/json"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// FinishRunWithResultTx is FinishRunWithResult inside tx, a write
// transaction of the same database someone else opened
// (db.TxResultFinisher): the checkpoint saver's, whose commit then also
// stores the run's last step. The lease fences it as it fences
// FinishRunWithResult (db.ErrLeaseLost: tx must be rolled back), unless
// ctx says tx already checked the same lease (txhook.WithFenced).
func (s *Store) FinishRunWithResultTx(ctx context.Context, tx any, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, error) {
	c, err := s.d.Wrap(tx)
	if err != nil {
		return db.Run{}, db.Thread{}, s.wrap(err, "FinishRunWithResultTx")
	}
	u, err := checkFinish(status, usage)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	tr, err := newThreadResult(r)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	// The thread's result sets its status: no FreeThread before it.
	run, err := s.finishRun(ctx, c, l, status, u, errMsg, false)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	th, err := s.setThreadResult(ctx, c, l.Tenant, l.ThreadID, tr)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	// What ends with the run commits with it: the queue's job, the run's
	// online evaluator samples.
	return run, th, txhook.RunEndOf(ctx, tx, run)
}
