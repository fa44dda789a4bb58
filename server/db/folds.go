package db

import (
	"context"
	"encoding/json"
	"time"
)

// TxRunCreator is implemented by a DB that can store a new run, and the
// thread it runs on when that is new, inside a write transaction someone
// else opened on the same database: the run queue's, so that the thread,
// the run and the job that will run it commit together (one write
// transaction to accept a run instead of three).
type TxRunCreator interface {
	// CreateRunTx is CreateRun inside tx, the database's own open write
	// transaction (a *sql.Tx for SQLite, a pgx.Tx for PostgreSQL). When
	// thread is not nil it is created first unless a thread with its ID
	// exists (CreateThread with IfExistsDoNothing; only its ID, Status and
	// Metadata are stored). The caller commits or rolls back tx.
	CreateRunTx(ctx context.Context, tx any, tenant string, thread *Thread, r Run) (Run, error)
	// ClassifyTxError returns an error of such a transaction (its commit
	// above all, which the caller makes) as the DB returns its own: a
	// full disk as a *StorageError of ErrStorageFull, and so on.
	ClassifyTxError(err error) error
}

// ThreadTag is the graph and assistant of a thread's latest run, which
// its metadata records under LangGraph's keys graph_id and assistant_id.
type ThreadTag struct {
	GraphID     string
	AssistantID string
}

// TxThreadTagger is implemented by a DB whose accept of a run can also
// record the run's graph and assistant in its thread's metadata, in the
// same transaction, so that a thread's first run does not take a write
// transaction (or, where the dialect can, a statement) of its own to tag
// it.
type TxThreadTagger interface {
	// CreateTaggedRunTx is CreateRunTx that also sets the thread's
	// metadata keys graph_id and assistant_id to tag's, keeping the
	// others, and moves its updated_at and expiry as UpdateThreadMetadata
	// does: a thread it creates is created with them, an existing one is
	// updated, in the run's own statement where the dialect can. A run it
	// does not store (a missing thread, a taken run ID) tags nothing.
	CreateTaggedRunTx(ctx context.Context, tx any, tenant string, thread *Thread, r Run, tag ThreadTag) (Run, error)
}

// PreClaimer is implemented by a DB whose CreateRunTx writes the run's
// pre-claim when its context asks for one (txhook.WithPreClaim): a lease
// row of token 0 for the pending run, owned by the process that will claim
// it, which the claim's own lease replaces. It is what insures a run the
// queue hands off to its own process instead of a queued job: if the
// process dies before the claim, the lease sweeper finds the pre-claim
// expired, drops it (DropLease) and enqueues the run's thread.
type PreClaimer interface {
	// RenewPreClaim sets the expiry of the run's pre-claim to until while
	// owner still holds it (token 0: not claimed yet) and reports whether
	// it did; false once the run was claimed, or the pre-claim is gone.
	RenewPreClaim(ctx context.Context, tenant, runID, owner string, until time.Time) (bool, error)
	// DropLease deletes a lease as ExpiredLeases returned it (the same
	// token and expiry); ErrLeaseLost when it changed since it was read
	// (renewed, claimed, taken over) or is gone.
	DropLease(ctx context.Context, expired Lease) error
	// ReleasePreClaim ends the run's pre-claim while owner holds it
	// (token 0), so that another process may claim the run at once; it
	// reports whether there was one. The queue calls it for a run it gave
	// to River instead of executing it, after the job was enqueued.
	ReleasePreClaim(ctx context.Context, tenant, runID, owner string) (bool, error)
}

// TxClaimer is implemented by a DB that can claim a run inside a write
// transaction someone else opened on the same database: the checkpoint
// saver's, so that a run's claim commits with its first step instead of in
// a transaction of its own.
type TxClaimer interface {
	// ClaimRunTx is ClaimRun inside tx, the database's own open write
	// transaction (a *sql.Tx for SQLite, a pgx.Tx for PostgreSQL). The
	// caller commits or rolls back tx; the lease holds only once it
	// commits.
	ClaimRunTx(ctx context.Context, tx any, tenant, runID, owner string, ttl time.Duration) (Run, Lease, error)
}

// TxResultFinisher is implemented by a DB that can finish a run with its
// thread's result (ResultFinisher) inside a write transaction someone else
// opened on the same database: the checkpoint saver's, so that a run's
// last checkpoint, its last events, its end and its job's completion
// commit together.
type TxResultFinisher interface {
	// FinishRunWithResultTx is FinishRunWithResult inside tx, the
	// database's own open write transaction (a *sql.Tx for SQLite, a
	// pgx.Tx for PostgreSQL), fenced by the lease (ErrLeaseLost, and tx
	// must then be rolled back), running ctx's internal/txhook end hook
	// as FinishRunWithResult does. The caller commits or rolls back tx;
	// the run has ended only once it commits. What it returns is
	// FinishRunWithResult's, as tx sees it.
	FinishRunWithResultTx(ctx context.Context, tx any, l Lease, status RunStatus, usage json.RawMessage, errMsg string, r ThreadResult) (Run, Thread, Pending, error)
}
