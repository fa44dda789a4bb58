package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// txFunc adds the caller's statements to the queue's open write
// transaction tx: a *sql.Tx on SQLite, a pgx.Tx on PostgreSQL.
type txFunc = func(ctx context.Context, tx any) error

// commitHook is a txFunc waiting, in a context, for the first write
// transaction River begins with that context.
type commitHook struct {
	fn        txFunc
	used      bool // fn was called, in a transaction that then committed or not
	committed bool // that transaction committed
}

type hookKey struct{}

// withCommitHook returns ctx carrying fn for the first transaction River
// begins with it.
func withCommitHook(ctx context.Context, fn txFunc) (context.Context, *commitHook) {
	h := &commitHook{fn: fn}
	return context.WithValue(ctx, hookKey{}, h), h
}

// hookExecutor is a River driver's executor whose transactions run the
// commit hook of the context they commit with. River's client inserts,
// deletes and retries jobs in transactions of its own begun on this
// executor, so this is how a caller's rows join the job's transaction
// while River still wakes its own workers after the commit, as it does for
// a plain Insert (InsertTx would not: River cannot know when the caller
// commits).
type hookExecutor struct {
	riverdriver.Executor
	unwrap func(riverdriver.ExecutorTx) any
	// begin, when set, begins the transaction instead of the executor.
	begin func(context.Context) (riverdriver.ExecutorTx, error)
}

// Begin begins River's transaction.
func (e hookExecutor) Begin(ctx context.Context) (riverdriver.ExecutorTx, error) {
	begin := e.Executor.Begin
	if e.begin != nil {
		begin = e.begin
	}
	tx, err := begin(ctx)
	if err != nil {
		return nil, err
	}
	return &hookTx{ExecutorTx: tx, unwrap: e.unwrap}, nil
}

// hookTx is River's transaction; Commit runs the context's hook first.
type hookTx struct {
	riverdriver.ExecutorTx
	unwrap func(riverdriver.ExecutorTx) any
}

// Commit runs the hook ctx carries, once, in the transaction, then commits
// it; a failing hook rolls the transaction back and its error is returned.
func (t *hookTx) Commit(ctx context.Context) error {
	h, _ := ctx.Value(hookKey{}).(*commitHook)
	if h == nil || h.used {
		return t.ExecutorTx.Commit(ctx)
	}
	h.used = true
	if err := h.fn(ctx, t.unwrap(t.ExecutorTx)); err != nil {
		if rerr := t.ExecutorTx.Rollback(context.WithoutCancel(ctx)); rerr != nil {
			return errors.Join(err, fmt.Errorf("roll back: %w", rerr))
		}
		return err
	}
	if err := t.ExecutorTx.Commit(ctx); err != nil {
		return err
	}
	h.committed = true
	return nil
}

// innerTx is the driver's own transaction under a hookTx.
func innerTx(execTx riverdriver.ExecutorTx) riverdriver.ExecutorTx {
	if h, ok := execTx.(*hookTx); ok {
		return h.ExecutorTx
	}
	return execTx
}

// GetExecutor returns the pool's executor with commit hooks.
func (d sqliteDriver) GetExecutor() riverdriver.Executor {
	return hookExecutor{Executor: d.Driver.GetExecutor(), unwrap: func(tx riverdriver.ExecutorTx) any { return d.UnwrapTx(tx) }}
}

// UnwrapTx returns the *sql.Tx of River's transaction.
func (d sqliteDriver) UnwrapTx(execTx riverdriver.ExecutorTx) *sql.Tx {
	return d.Driver.UnwrapTx(innerTx(execTx))
}

// pgDriver is River's pgx driver with commit hooks (see hookExecutor),
// whose transactions are pgdb.Tx on pool: the BEGIN goes with the first
// statement (River's job insert, in a run's accept) and the writes others
// queue in it go with the next statement or the COMMIT.
type pgDriver struct {
	*riverpgxv5.Driver
	pool *pgxpool.Pool
}

// GetExecutor returns the pool's executor with commit hooks.
func (d pgDriver) GetExecutor() riverdriver.Executor {
	return hookExecutor{Executor: d.Driver.GetExecutor(), unwrap: func(tx riverdriver.ExecutorTx) any { return d.UnwrapTx(tx) },
		begin: func(ctx context.Context) (riverdriver.ExecutorTx, error) {
			tx, err := pgdb.Begin(ctx, d.pool, pgx.TxOptions{})
			if err != nil {
				return nil, err
			}
			return d.Driver.UnwrapExecutor(tx), nil
		}}
}

// UnwrapTx returns the pgx.Tx of River's transaction.
func (d pgDriver) UnwrapTx(execTx riverdriver.ExecutorTx) pgx.Tx {
	return d.Driver.UnwrapTx(innerTx(execTx))
}

// EnqueueWith is Enqueue with the caller's writes in the job's
// transaction: fn is called with an open write transaction on the queue's
// database (a *sql.Tx on SQLite, a pgx.Tx on PostgreSQL), and its
// statements commit or roll back with what makes sure the thread is
// advanced. So a run and what runs it are one write where Enqueue after
// the run's own transaction was two, and nothing starts before the rows it
// needs exist.
//
// It reports whether fn's statements committed: when not, nothing of fn is
// stored, whatever the error says. When they did and err is not nil, the
// job could not be made sure of afterwards (as when Enqueue fails after
// the caller's own commit). fn is called once at most and must not keep tx.
//
// When one of Config.Handoffs is free, the thread is worked by this
// process itself, with no River job (the hand-off, handoff.go): the
// transaction is the queue's own, and fn's context asks for the pre-claim
// of the run fn stores (txhook.PreClaimOf), which insures it instead of a
// job. If fn writes none, a River job is inserted in the transaction
// after fn's statements, as EnqueueTx would. Delivery is as for Enqueue
// either way.
func (q *Queue) EnqueueWith(ctx context.Context, tenant, threadID string, fn txFunc) (stored bool, err error) {
	if err := checkIDs(tenant, threadID); err != nil {
		return false, err
	}
	if fn == nil {
		return false, errors.New("queue: EnqueueWith: the function is nil")
	}
	if q.hand.acquire() {
		return q.enqueueHandedOff(ctx, tenant, threadID, fn)
	}
	hctx, h := withCommitHook(ctx, fn)
	ops := q.eng.ops()
	ops.snoozes = &q.snoozes
	rawInsert := ops.insert
	ops.insert = func(ctx context.Context, a river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
		first := !h.used
		res, err := rawInsert(ctx, a, opts)
		if err == nil && first && h.committed && res.UniqueSkippedAsDuplicate {
			// The job found was read before fn's rows committed: on
			// PostgreSQL it may have started since and missed them. Ask
			// again, now that they are in, and decide on what is found.
			res, err = rawInsert(ctx, a, opts)
		}
		return res, err
	}
	err = enqueue(hctx, ops, coalesce, q.cfg.QueueName, tenant, threadID)
	if !h.used && err == nil {
		err = errors.New("no transaction of the queue ran the function")
	}
	if err != nil {
		return h.committed, fmt.Errorf("queue: enqueue thread %q of tenant %q with the caller's writes: %w", threadID, tenant, err)
	}
	return h.committed, nil
}

// enqueueHandedOff is EnqueueWith on a hand-off slot acquire took: fn runs
// in the queue's own transaction, asked to write its run's pre-claim, and
// after the commit the thread is handed off (launch). When fn wrote no
// pre-claim, the thread's job is inserted in the transaction instead and
// the slot given back.
func (q *Queue) enqueueHandedOff(ctx context.Context, tenant, threadID string, fn txFunc) (stored bool, err error) {
	wrap := func(err error) error {
		return fmt.Errorf("queue: enqueue thread %q of tenant %q with the caller's writes: %w", threadID, tenant, err)
	}
	tx, err := q.eng.begin(ctx)
	if err != nil {
		q.hand.unused()
		return false, wrap(err)
	}
	pc := &txhook.PreClaim{Owner: q.cfg.Owner, Until: q.preClaimUntil()}
	err = fn(txhook.WithPreClaim(ctx, pc), tx.raw)
	claims := pc.Runs()
	if err == nil && len(claims) == 0 {
		err = enqueue(ctx, tx.ops, replace, q.cfg.QueueName, tenant, threadID)
	}
	if err == nil {
		err = tx.commit(ctx)
		if err != nil {
			q.hand.unused()
			return false, wrap(err)
		}
	}
	if err != nil {
		if rerr := tx.rollback(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("roll back: %w", rerr))
		}
		q.hand.unused()
		return false, wrap(err)
	}
	if len(claims) == 0 {
		q.hand.unused()
		return true, nil
	}
	q.launch(tenant, threadID, claims)
	return true, nil
}
