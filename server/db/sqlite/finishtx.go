package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// FinishRunWithResultTx is FinishRunWithResult inside tx, a write
// transaction of the same database someone else opened (db.TxResultFinisher):
// the checkpoint saver's, whose commit then also stores the run's last
// step.
func (d *DB) FinishRunWithResultTx(ctx context.Context, tx any, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, error) {
	stx, ok := tx.(*sql.Tx)
	if !ok || stx == nil {
		return db.Run{}, db.Thread{}, fmt.Errorf("server/db/sqlite: FinishRunWithResultTx needs a *sql.Tx of the same database, got %T", tx)
	}
	if err := dbutil.TerminalStatus(status); err != nil {
		return db.Run{}, db.Thread{}, err
	}
	u, err := dbutil.OptionalJSON("usage", usage)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	if err := finishRunTx(ctx, stx, l, status, u, errMsg); err != nil {
		return db.Run{}, db.Thread{}, err
	}
	if err := setThreadResultTx(ctx, stx, l.Tenant, l.ThreadID, r); err != nil {
		return db.Run{}, db.Thread{}, err
	}
	run, err := getRun(ctx, stx, l.Tenant, "", l.RunID)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	th, err := getThread(ctx, stx, l.Tenant, l.ThreadID)
	if err != nil {
		return db.Run{}, db.Thread{}, err
	}
	return run, th, txhook.RunEndOf(ctx, stx, run)
}
