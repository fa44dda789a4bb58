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
// transaction: fn is called with River's open write transaction (a *sql.Tx
// on SQLite, a pgx.Tx on PostgreSQL, on the queue's database) in which the
// thread's job is inserted, and its statements commit or roll back with
// that insert, before River wakes its workers. So a run and the job that
// runs it are one write where Enqueue after the run's own transaction was
// two, and no job ever starts before the rows it needs exist.
//
// It reports whether fn's statements committed: when not, nothing of fn is
// stored, whatever the error says. When they did and err is not nil, the
// job could not be made sure of afterwards (as when Enqueue fails after
// the caller's own commit). fn is called once at most and must not keep tx.
//
// A job it inserts (rather than finding one waiting) is worked by this
// process itself when one of Config.Handoffs is free: no River fetch, no
// completion by River (the hand-off, handoff.go). Delivery is as for
// Enqueue either way.
func (q *Queue) EnqueueWith(ctx context.Context, tenant, threadID string, fn txFunc) (stored bool, err error) {
	if err := checkIDs(tenant, threadID); err != nil {
		return false, err
	}
	if fn == nil {
		return false, errors.New("queue: EnqueueWith: the function is nil")
	}
	hctx, h := withCommitHook(ctx, fn)
	ops := q.eng.ops()
	ops.snoozes = &q.snoozes
	ops.handoffs = &q.hand
	// A job inserted fresh is handed off when a slot is free: inserted
	// scheduled at the end of the window, so that no River worker fetches
	// it, and worked by a goroutine of this process (handoff.go).
	handoff := q.hand.acquire()
	var handed *rivertype.JobRow
	rawInsert := ops.insert
	quiet, _ := q.eng.(quietInserter)
	insert := func(ctx context.Context, a river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
		ins := rawInsert
		if handoff {
			o := *opts
			o.ScheduledAt = q.handoffUntil()
			opts = &o
			if quiet != nil && !h.used {
				// The first insert, with fn's rows: a fresh row is this
				// process's to work, and waking River's workers for it
				// would only make them fetch nothing. A row found instead
				// is asked for again below by a plain insert, which wakes
				// them as before.
				ins = quiet.insertQuiet
			}
		}
		res, err := ins(ctx, a, opts)
		if err == nil && handoff && !res.UniqueSkippedAsDuplicate {
			handed = res.Job
		}
		return res, err
	}
	ops.insert = func(ctx context.Context, a river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
		first := !h.used
		res, err := insert(ctx, a, opts)
		if err == nil && first && h.committed && res.UniqueSkippedAsDuplicate {
			// The job found was read before fn's rows committed: on
			// PostgreSQL it may have started since and missed them. Ask
			// again, now that they are in, and decide on what is found.
			res, err = insert(ctx, a, opts)
		}
		return res, err
	}
	err = enqueue(hctx, ops, coalesce, q.cfg.QueueName, tenant, threadID)
	if !h.used && err == nil {
		err = errors.New("no transaction of the queue ran the function")
	}
	switch {
	case handed != nil && h.committed:
		q.launch(handed, tenant, threadID)
	case handoff:
		q.hand.unused()
	}
	if err != nil {
		return h.committed, fmt.Errorf("queue: enqueue thread %q of tenant %q with the caller's writes: %w", threadID, tenant, err)
	}
	return h.committed, nil
}
