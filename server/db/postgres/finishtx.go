package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// FinishRunWithResultTx is FinishRunWithResult inside tx, a write
// transaction of the same database someone else opened (db.TxResultFinisher):
// the checkpoint saver's, whose commit then also stores the run's last
// step.
func (d *DB) FinishRunWithResultTx(ctx context.Context, tx any, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return db.Run{}, db.Thread{}, fmt.Errorf("server/db/postgres: FinishRunWithResultTx needs a pgx.Tx of the same database, got %T", tx)
	}
	if err := dbutil.TerminalStatus(status); err != nil {
		return db.Run{}, db.Thread{}, err
	}
	u, err := dbutil.OptionalJSON("usage", usage)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	if err := finishRunTx(ctx, ptx, l, status, u, errMsg); err != nil {
		return db.Run{}, db.Thread{}, err
	}
	if err := setThreadResultTx(ctx, ptx, l.Tenant, l.ThreadID, r); err != nil {
		return db.Run{}, db.Thread{}, err
	}
	run, err := getRun(ctx, ptx, l.Tenant, "", l.RunID, false)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	th, err := getThread(ctx, ptx, l.Tenant, l.ThreadID)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	return run, th, txhook.RunEndOf(ctx, ptx, run)
}
