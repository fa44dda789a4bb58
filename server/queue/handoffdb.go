package queue

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/internal/pgdb"
)

// ownTx is a write transaction the queue opens itself on its database, for
// a hand-off's accept (EnqueueWith): no River statement runs in it unless
// the caller's statements wrote no pre-claim.
type ownTx struct {
	raw      any    // *sql.Tx or pgx.Tx, what the caller's function gets
	ops      jobOps // River's calls in the transaction
	commit   func(ctx context.Context) error
	rollback func(ctx context.Context) error
}

// begin opens a write transaction on the SQLite pool.
func (e *sqliteEngine) begin(ctx context.Context) (*ownTx, error) {
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("queue: begin a transaction: %w", err)
	}
	return &ownTx{raw: tx, ops: e.txOps(tx),
		commit:   func(context.Context) error { return tx.Commit() },
		rollback: func(context.Context) error { return tx.Rollback() }}, nil
}

// txOps are River's calls in tx, the caller's transaction on the SQLite
// pool (they wake no worker: the poll finds the job).
func (e *sqliteEngine) txOps(tx *sql.Tx) jobOps { return riverTxOps(e.client, tx) }

// begin opens a write transaction on the PostgreSQL pool whose BEGIN goes
// with its first statement, and whose deferred writes (a pre-claim) go
// with the next statement or the COMMIT (pgdb.Tx).
func (e *pgEngine) begin(ctx context.Context) (*ownTx, error) {
	tx, err := pgdb.Begin(ctx, e.pool, pgx.TxOptions{})
	if err != nil {
		return nil, fmt.Errorf("queue: begin a transaction: %w", err)
	}
	return &ownTx{raw: pgx.Tx(tx), ops: e.txOps(tx), commit: tx.Commit, rollback: tx.Rollback}, nil
}

// newOwnerID is a random ID for a Config without an Owner.
func newOwnerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
