package sqlcore

import (
	"context"
	"encoding/json"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// FinishRunWithResultTx is FinishRunWithResult inside tx, a write
// transaction of the same database someone else opened
// (db.TxResultFinisher): the checkpoint saver's, whose commit then also
// stores the run's last step. The lease fences it as it fences
// FinishRunWithResult (db.ErrLeaseLost: tx must be rolled back), unless
// ctx says tx already checked the same lease (txhook.WithFenced).
func (s *Store) FinishRunWithResultTx(ctx context.Context, tx any, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, db.Pending, error) {
	c, err := s.d.Wrap(tx)
	if err != nil {
		return db.Run{}, db.Thread{}, db.Pending{}, s.wrap(err, "FinishRunWithResultTx")
	}
	u, err := checkFinish(status, usage)
	if err != nil {
		return db.Run{}, db.Thread{}, db.Pending{}, err
	}
	tr, err := newThreadResult(r)
	if err != nil {
		return db.Run{}, db.Thread{}, db.Pending{}, err
	}
	f, err := s.finishWithResult(ctx, c, l, status, u, errMsg, tr)
	if err != nil {
		return db.Run{}, db.Thread{}, db.Pending{}, err
	}
	// What ends with the run commits with it: the queue's job, the run's
	// online evaluator samples.
	return f.run, f.thread, f.pending, txhook.RunEndOf(ctx, tx, f.run)
}

// finished is what finishWithResult stored and read.
type finished struct {
	run     db.Run
	thread  db.Thread
	pending db.Pending
}

// finishWithResult ends l's run and stores r as its thread's result in c:
// in one statement where the dialect has EndRunWithResult, else with
// finishRun (the thread's result sets its status: no FreeThread before
// it) and the thread's result, whose statement also reads what the thread
// has pending where the dialect has SetThreadResultPending.
func (s *Store) finishWithResult(ctx context.Context, c Conn, l db.Lease, status db.RunStatus, u []byte, errMsg string, r threadResult) (finished, error) {
	p := db.Pending{Known: true}
	if s.q.EndRunWithResult == "" {
		run, err := s.finishRun(ctx, c, l, status, u, errMsg, false)
		if err != nil {
			return finished{}, err
		}
		if s.q.SetThreadResultPending == "" {
			th, err := s.setThreadResult(ctx, c, l.Tenant, l.ThreadID, r)
			return finished{run: run, thread: th}, err
		}
		th, err := s.setThreadResultBy(ctx, c, s.q.SetThreadResultPending, l.Tenant, l.ThreadID, r, &p.Due, s.d.ScanTime(&p.Next))
		if err != nil {
			return finished{}, err
		}
		return finished{run: run, thread: th, pending: p}, nil
	}
	tx := s.d.Unwrap(c)
	n := txhook.Want(ctx, tx, l.Tenant, l.RunID)
	var (
		seq int64
		tc  threadCols
	)
	now := s.d.Time(dbutil.Now())
	row := c.QueryRow(ctx, s.q.EndRunWithResult, string(status), u, errMsg, now, l.Tenant, l.RunID, n, l.Token,
		string(r.Status), r.Error, r.Values != nil, nullBytes(r.values), nullBytes(r.interrupts), l.ThreadID, r.Title)
	dest := append(append([]any{&seq}, s.threadDest(&tc)...), &p.Due, s.d.ScanTime(&p.Next))
	run, err := s.scanRun(row, l.Tenant, dest...)
	if s.d.IsNoRows(err) {
		return finished{}, s.leaseLost(l)
	}
	if err != nil {
		return finished{}, s.wrap(err, "finish run %q with its thread's result", l.RunID)
	}
	txhook.Reserve(ctx, tx, l.Tenant, l.RunID, seq)
	th, _, err := s.threadOf(&tc, l.Tenant)
	if err != nil {
		return finished{}, err
	}
	return finished{run: run, thread: th, pending: p}, nil
}
