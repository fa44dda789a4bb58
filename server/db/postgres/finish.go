package postgres

import (
	"context"
	"encoding/json"
	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// FinishRunWithResult is FinishRun and SetThreadResult of the run's thread
// in one transaction, fenced by the lease: a worker that lost the run
// records neither. The transaction runs ctx's internal/txhook end hook
// before it commits (the run queue completes the run's job in it).
func (d *DB) FinishRunWithResult(ctx context.Context, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, error) {
	if err := dbutil.TerminalStatus(status); err != nil {
		return db.Run{}, db.Thread{}, err
	}
	u, err := dbutil.OptionalJSON("usage", usage)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	var (
		run db.Run
		th  db.Thread
	)
	err = d.write(ctx, func(tx pgx.Tx) error {
		if err := finishRunTx(ctx, tx, l, status, u, errMsg); err != nil {
			return err
		}
		if err := setThreadResultTx(ctx, tx, l.Tenant, l.ThreadID, r); err != nil {
			return err
		}
		var err error
		if run, err = getRun(ctx, tx, l.Tenant, "", l.RunID, false); err != nil {
			return err
		}
		if th, err = getThread(ctx, tx, l.Tenant, l.ThreadID); err != nil {
			return err
		}
		// What ends with the run commits with it: the queue's job, the
		// run's online evaluator samples.
		return txhook.RunEndOf(ctx, tx, run)
	})
	return run, th, err
}
