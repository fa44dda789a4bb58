// Package queue is the agent service's run queue: durable jobs on River
// (github.com/riverqueue/river), over the embedded SQLite database or over
// PostgreSQL, with the same code both ways.
//
// There is one kind of job, "trellis.advance_thread" with arguments
// {tenant, thread_id}. It means "advance thread T from its latest state":
// the job carries no run, no input and no position, so a job picked up
// after a crash, a restart or a snooze does the right thing by reading the
// thread's state when it starts. The worker calls the Advance function the
// run service gives in Config, and its Result says what happens next: Done
// completes the job; Busy snoozes it (the thread has a running run
// elsewhere); More completes it after enqueueing the thread again.
//
// Delivery: after Enqueue(tenant, thread) returns, Advance is called for
// that thread at a moment after the call began, unless the queue is stopped
// first. Enqueue never merges a request into a job that is already running
// (its Advance may have read the state already), so a run recorded just
// before Enqueue is never stranded behind a job that is completing. Jobs of
// one thread are deduplicated among waiting jobs only; see Enqueue.
//
// Hand-off: a thread EnqueueWith would insert a job for is worked by a
// goroutine of this process with no River job, the run's pre-claim (a
// lease the service's sweeper watches, on the run's row) insuring it if
// this process dies (see handoff.go).
//
// Failures: each job is attempted once (MaxAttempts 1). An Advance that
// returns an error, panics or is interrupted (JobTimeout, a hard stop)
// completes its job and River never retries it: the run service records
// the failure of the run itself and resumes interrupted runs through its
// leases. River's rescuer is the backstop for a job whose process died
// (killed outright, no chance to complete it): each kind has its own
// timeout (see rescue.go), and the rescuer retries or discards a job
// still marked running a minute after that timeout passed — a run job
// after JobTimeout, an experiment unit after UnitTimeout, minutes rather
// than River's default of hours.
package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
)

// Kind is the River job kind of a run job.
const Kind = "trellis.advance_thread"

// Defaults of Config. The fetch settings keep River's own defaults (a
// 100 ms cooldown and a 1 s poll) from dominating the latency of a run.
const (
	// DefaultJobTimeout bounds one call of Advance: its context is
	// cancelled after it. A run that needs longer continues in a new job
	// (Advance returns More).
	DefaultJobTimeout = time.Hour
	// DefaultWorkers is how many jobs one Queue works at once.
	DefaultWorkers = 50
	// DefaultBusySnooze is how long a job waits when Advance returns Busy
	// without a duration.
	DefaultBusySnooze = time.Second
	// DefaultFetchCooldown is the least time between two fetches of jobs.
	DefaultFetchCooldown = time.Millisecond
	// DefaultSQLitePollInterval is how often the SQLite queue looks for jobs
	// it was not told about: jobs inserted by another process and snoozed
	// jobs coming due. Jobs enqueued by this Queue wake it at once.
	DefaultSQLitePollInterval = 50 * time.Millisecond
	// DefaultPostgresPollInterval is the same for PostgreSQL, where
	// LISTEN/NOTIFY wakes every process on each insert, so polling only
	// finds snoozed jobs coming due.
	DefaultPostgresPollInterval = 200 * time.Millisecond
	// DefaultCompletedRetention is how long completed job rows are kept
	// (they hold nothing the service needs once done).
	DefaultCompletedRetention = time.Hour
	// DefaultHandoffWindow is the default Config.HandoffWindow.
	DefaultHandoffWindow = 30 * time.Second
	// minHandoffWindow is the shortest HandoffWindow: a hand-off's
	// pre-claims are renewed every third of it.
	minHandoffWindow = 30 * time.Millisecond
	// DefaultQueueName is the River queue the jobs go to.
	DefaultQueueName = "trellis_runs"
	// stopCancelWait bounds how long Stop waits, after its context ended
	// and the running jobs' contexts were cancelled, for them to return.
	stopCancelWait = 10 * time.Second
)

// Outcome is what an Advance call did with its thread.
type Outcome int

// Outcomes of Advance.
const (
	// Done: nothing more to do for now; the job completes.
	Done Outcome = iota
	// Busy: the thread has a running run elsewhere; the job snoozes for
	// Result.After and then calls Advance again.
	Busy
	// More: work is pending that this call did not do (a queued run, or a
	// run that stopped at JobTimeout); the thread is enqueued again before
	// the job completes, so nothing is stranded.
	More
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Done:
		return "done"
	case Busy:
		return "busy"
	case More:
		return "more"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result is what Advance returns.
type Result struct {
	// Outcome says what happens to the job.
	Outcome Outcome
	// After is how long a Busy job snoozes; zero means Config.BusySnooze.
	// It is ignored for other outcomes and must not be negative.
	After time.Duration
}

// AdvanceFunc advances the thread (tenant, threadID) from its latest state.
// ctx is cancelled at JobTimeout and on a hard stop; a call that returns an
// error completes its job, which is never retried.
type AdvanceFunc func(ctx context.Context, tenant, threadID string) (Result, error)

// Config configures a Queue. Exactly one of SQLite and Postgres is set, and
// Advance is required; zero values of the rest mean the defaults above.
type Config struct {
	// SQLite is the embedded database's pool for River. It must be limited
	// to one connection (SetMaxOpenConns(1)), as River's SQLite driver
	// needs, or be the Write pool of internal/sqlitedb, which is meant here
	// (its connections take turns on one: sqlitedb.SerializesWrites):
	// River's statements then queue behind the service's own writes
	// instead of failing with SQLITE_BUSY.
	SQLite *sql.DB
	// Postgres is the PostgreSQL pool. River's tables go to Schema, or to
	// the pool's search_path when Schema is "". Workers are woken by
	// LISTEN/NOTIFY, so the pool must reach the server directly, not through
	// a transaction-pooling proxy. River holds one connection for LISTEN
	// and each finished job takes one briefly to complete, so a pool much
	// smaller than Workers (pgxpool's default is max(4, CPUs)) limits
	// throughput, not correctness.
	Postgres *pgxpool.Pool
	// Schema is the PostgreSQL schema of River's tables (Postgres only).
	Schema string

	// Advance is called for each job; see AdvanceFunc.
	Advance AdvanceFunc
	// Webhook sends webhook jobs (EnqueueWebhook); nil: none are worked.
	Webhook WebhookFunc
	// WebhookAttempts bounds the attempts of one webhook
	// (DefaultWebhookAttempts); WebhookRetryBase is the wait after the
	// first failure, doubled after each next one (DefaultWebhookRetryBase).
	WebhookAttempts  int
	WebhookRetryBase time.Duration

	// Unit works experiment units (EnqueueUnit); nil: none are worked.
	Unit UnitFunc
	// UnitAttempts bounds the attempts of one unit (DefaultUnitAttempts).
	UnitAttempts int

	// Online scores online evaluator samples (EnqueueOnline); nil: none
	// are worked.
	Online OnlineFunc

	// Workers is how many jobs run at once in this Queue.
	Workers int
	// Handoffs is how many threads EnqueueWith would insert jobs for may
	// at once be worked by this process itself, with no River job (the
	// hand-off, see handoff.go); beyond it, jobs go through River as any
	// other. They run beside the Workers River runs, so up to Workers +
	// Handoffs Advance calls run at once. Zero means Workers; a negative
	// value turns the hand-off off.
	Handoffs int
	// HandoffWindow is how long a handed-off run's pre-claim lasts before
	// the service's lease sweeper may enqueue its thread through River:
	// about the longest a run accepted by a process that died before
	// claiming it waits (plus the sweeper's interval). While this process
	// works the thread it renews the pre-claims of runs not claimed yet
	// every third of the window (one write each, through PreClaims), and a
	// hand-off still waiting on a Busy thread after half of it goes to
	// River (DefaultHandoffWindow).
	HandoffWindow time.Duration
	// Owner names this process in the pre-claims of the runs it hands off
	// to itself (txhook.PreClaim): the service's lease owner. Empty: an ID
	// made at New.
	Owner string
	// PreClaims renews those pre-claims while a hand-off lasts (the
	// service's store); nil: they are not renewed, and a hand-off that
	// outlasts its window before its claim may see its thread enqueued
	// through River beside it (harmless: Advance answers Busy or Done).
	PreClaims PreClaimRenewer
	// JobTimeout bounds one Advance call (DefaultJobTimeout).
	JobTimeout time.Duration
	// RescueStuckJobsAfter is the least time a job stays marked running
	// before River's rescuer may retry or discard it
	// (DefaultRescueStuckJobsAfter); each kind waits for its own timeout
	// plus rescueMargin first, so a working job is never rescued.
	RescueStuckJobsAfter time.Duration
	// UnitTimeout bounds one attempt of an experiment unit
	// (DefaultUnitTimeout); a unit whose replica was killed is tried
	// again about this long, plus a margin of a minute (or of UnitTimeout
	// when shorter), after its attempt started, at River's next rescue
	// (every 30 s) once RescueStuckJobsAfter has passed too.
	UnitTimeout time.Duration
	// BusySnooze is the snooze of a Busy result without a duration.
	BusySnooze time.Duration
	// FetchCooldown is the least time between two fetches.
	FetchCooldown time.Duration
	// FetchPollInterval is the time between fetches nobody asked for.
	FetchPollInterval time.Duration
	// CompletedRetention is how long completed jobs are kept.
	CompletedRetention time.Duration
	// QueueName is the River queue used (DefaultQueueName): letters,
	// digits, '_' and '-'.
	QueueName string
	// Logger receives Advance errors and River's own logs; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Queue is a started River client working run jobs. Create it with New and
// stop it with Stop. Its methods are safe for concurrent use.
type Queue struct {
	cfg     Config
	eng     engine
	kind    string // "sqlite" or "postgres", for messages
	snoozes snoozeTracker
	hand    handoffs
}

// engine is the driver-specific part of a Queue.
type engine interface {
	ops() jobOps
	// complete marks the running job completed now, in a transaction of
	// its own, instead of in River's next completer batch.
	complete(ctx context.Context, job *river.Job[args]) error
	// completeIn marks the running job completed in tx, the caller's open
	// write transaction on the queue's database (*sql.Tx or pgx.Tx), so it
	// commits with the caller's rows. A failure leaves tx usable.
	completeIn(ctx context.Context, tx any, job *river.Job[args]) error
	// begin opens a write transaction of the queue's own on its database
	// (a hand-off's accept, handoffdb.go).
	begin(ctx context.Context) (*ownTx, error)
	stop(ctx context.Context) error
	stopAndCancel(ctx context.Context) error
}

var queueNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// New checks cfg, applies River's migrations to the database and starts
// working jobs. Migrations run under an advisory lock on PostgreSQL, so
// processes starting together migrate once; on SQLite they run on the
// single connection of cfg.SQLite, inside this process.
func New(ctx context.Context, cfg Config) (*Queue, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg}
	q.hand.init(max(cfg.Handoffs, 0))
	rcfg := q.riverConfig()
	var err error
	switch {
	case cfg.SQLite != nil:
		q.kind = "sqlite"
		q.eng, err = newSQLiteEngine(ctx, cfg, rcfg)
	default:
		q.kind = "postgres"
		q.eng, err = newPostgresEngine(ctx, cfg, rcfg)
	}
	if err != nil {
		q.hand.cancel()
		return nil, err
	}
	return q, nil
}

// fill validates cfg and sets its defaults.
func (c *Config) fill() error {
	var errs []error
	switch {
	case c.SQLite == nil && c.Postgres == nil:
		errs = append(errs, errors.New("neither SQLite nor Postgres is set; give the database the queue lives in"))
	case c.SQLite != nil && c.Postgres != nil:
		errs = append(errs, errors.New("both SQLite and Postgres are set; give one"))
	case c.SQLite != nil && c.SQLite.Stats().MaxOpenConnections != 1 && !sqlitedb.SerializesWrites(c.SQLite):
		errs = append(errs, fmt.Errorf("the SQLite pool allows %d connections; River's SQLite driver needs a pool of one (SetMaxOpenConns(1), as sqlitedb.DB.Write)",
			c.SQLite.Stats().MaxOpenConnections))
	}
	if c.SQLite != nil && c.Schema != "" {
		errs = append(errs, errors.New("a Schema is set for SQLite; it names a PostgreSQL schema only"))
	}
	if c.Advance == nil {
		errs = append(errs, errors.New("no Advance function is set; give the function that advances a thread"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"JobTimeout", c.JobTimeout}, {"RescueStuckJobsAfter", c.RescueStuckJobsAfter}, {"UnitTimeout", c.UnitTimeout}, {"BusySnooze", c.BusySnooze},
		{"FetchCooldown", c.FetchCooldown}, {"FetchPollInterval", c.FetchPollInterval}, {"CompletedRetention", c.CompletedRetention},
		{"HandoffWindow", c.HandoffWindow},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s is %s; it must not be negative (zero means the default)", d.name, d.v))
		}
	}
	if c.Handoffs > 10000 {
		errs = append(errs, fmt.Errorf("the number of Handoffs is %d; it must be at most 10000 (zero means Workers, negative none)", c.Handoffs))
	}
	if c.HandoffWindow > 0 && c.HandoffWindow < minHandoffWindow {
		errs = append(errs, fmt.Errorf("HandoffWindow is %s; it must be at least %s (zero means %s)", c.HandoffWindow, minHandoffWindow, DefaultHandoffWindow))
	}
	if c.Workers < 0 || c.Workers > 10000 {
		errs = append(errs, fmt.Errorf("the number of Workers is %d; it must be between 1 and 10000 (zero means %d)", c.Workers, DefaultWorkers))
	}
	if c.WebhookAttempts < 0 || c.WebhookAttempts > 100 || c.WebhookRetryBase < 0 {
		errs = append(errs, fmt.Errorf("WebhookAttempts %d must be between 1 and 100 and WebhookRetryBase %s not negative (zero means the defaults)", c.WebhookAttempts, c.WebhookRetryBase))
	}
	if c.UnitAttempts < 0 || c.UnitAttempts > 100 {
		errs = append(errs, fmt.Errorf("UnitAttempts %d must be between 1 and 100 (zero means the default)", c.UnitAttempts))
	}
	if c.QueueName != "" && !queueNameRE.MatchString(c.QueueName) {
		errs = append(errs, fmt.Errorf("QueueName %q holds characters other than letters, digits, '_' and '-' or is over 128 bytes", c.QueueName))
	}
	if len(errs) > 0 {
		return fmt.Errorf("queue: bad config: %w", errors.Join(errs...))
	}
	c.Workers = cmpOr(c.Workers, DefaultWorkers)
	c.JobTimeout = cmpOr(c.JobTimeout, DefaultJobTimeout)
	c.Handoffs = cmpOr(c.Handoffs, c.Workers)
	c.HandoffWindow = cmpOr(c.HandoffWindow, DefaultHandoffWindow)
	c.BusySnooze = cmpOr(c.BusySnooze, DefaultBusySnooze)
	c.FetchCooldown = cmpOr(c.FetchCooldown, DefaultFetchCooldown)
	poll := DefaultPostgresPollInterval
	if c.SQLite != nil {
		poll = DefaultSQLitePollInterval
	}
	c.FetchPollInterval = cmpOr(c.FetchPollInterval, poll)
	c.CompletedRetention = cmpOr(c.CompletedRetention, DefaultCompletedRetention)
	c.QueueName = cmpOr(c.QueueName, DefaultQueueName)
	c.WebhookAttempts = cmpOr(c.WebhookAttempts, DefaultWebhookAttempts)
	c.WebhookRetryBase = cmpOr(c.WebhookRetryBase, DefaultWebhookRetryBase)
	c.UnitAttempts = cmpOr(c.UnitAttempts, DefaultUnitAttempts)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Owner == "" {
		c.Owner = "queue-" + newOwnerID()
	}
	if c.FetchPollInterval < c.FetchCooldown {
		return fmt.Errorf("queue: bad config: FetchPollInterval %s is shorter than FetchCooldown %s", c.FetchPollInterval, c.FetchCooldown)
	}
	c.RescueStuckJobsAfter = cmpOr(c.RescueStuckJobsAfter, DefaultRescueStuckJobsAfter)
	c.UnitTimeout = cmpOr(c.UnitTimeout, DefaultUnitTimeout)
	return nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// riverConfig is the River client configuration for q (without workers).
func (q *Queue) riverConfig() *river.Config {
	c := q.cfg
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{q: q})
	if c.Webhook != nil {
		river.AddWorker(workers, &webhookWorker{q: q})
	}
	if c.Unit != nil {
		river.AddWorker(workers, &unitWorker{q: q})
	}
	if c.Online != nil {
		river.AddWorker(workers, &onlineWorker{q: q})
	}
	return &river.Config{
		CompletedJobRetentionPeriod: c.CompletedRetention,
		FetchCooldown:               c.FetchCooldown,
		FetchPollInterval:           c.FetchPollInterval,
		JobTimeout:                  c.RescueStuckJobsAfter, // every worker has its own Timeout (rescue.go)
		Logger:                      c.Logger,
		MaxAttempts:                 1,
		Queues:                      map[string]river.QueueConfig{c.QueueName: {MaxWorkers: c.Workers}},
		RescueStuckJobsAfter:        c.RescueStuckJobsAfter,
		Schema:                      c.Schema,
		Workers:                     workers,
	}
}

// Enqueue asks for thread (tenant, threadID) to be advanced: Advance will
// be called for it, starting after Enqueue began. Call it after the state
// change that needs the advance has committed.
//
// Jobs of one thread are deduplicated among waiting jobs: when a job of the
// thread is waiting, Enqueue adds nothing (a snoozed one is made due now and
// starts at the next poll). A running job is never reused, since its
// Advance may already have read the state, so a request made while a job is
// completing gets a job of its own. A thread has at most a few live jobs
// (6 slots), beyond which a request gets a job without deduplication.
func (q *Queue) Enqueue(ctx context.Context, tenant, threadID string) error {
	if err := checkIDs(tenant, threadID); err != nil {
		return err
	}
	return q.enqueue(ctx, coalesce, tenant, threadID)
}

// EnqueueAt asks for the thread to be advanced at or after at (a run with
// a delayed start). Such a job is not deduplicated, and no Enqueue merges
// into it or moves it earlier, so it cannot start too soon and find nothing
// due. River's scheduler makes it available, so it starts up to about 5 s
// (the scheduler's interval) after at. A time not in the future is Enqueue.
func (q *Queue) EnqueueAt(ctx context.Context, tenant, threadID string, at time.Time) error {
	if err := checkIDs(tenant, threadID); err != nil {
		return err
	}
	if !at.After(time.Now()) {
		return q.enqueue(ctx, coalesce, tenant, threadID)
	}
	_, err := q.eng.ops().insert(ctx, args{Tenant: tenant, ThreadID: threadID, Slot: slotDelayed},
		&river.InsertOpts{Queue: q.cfg.QueueName, ScheduledAt: at})
	if err != nil {
		return fmt.Errorf("queue: enqueue thread %q of tenant %q for %s: %w", threadID, tenant, at.Format(time.RFC3339Nano), err)
	}
	return nil
}

// enqueue is Enqueue with a choice of how waiting jobs are treated.
func (q *Queue) enqueue(ctx context.Context, m mode, tenant, threadID string) error {
	ops := q.eng.ops()
	ops.snoozes = &q.snoozes
	if err := enqueue(ctx, ops, m, q.cfg.QueueName, tenant, threadID); err != nil {
		return fmt.Errorf("queue: enqueue thread %q of tenant %q: %w", threadID, tenant, err)
	}
	return nil
}

// EnqueueTx is Enqueue inside the caller's PostgreSQL transaction: the job
// exists if and only if tx commits, together with the state change that
// needs it. It never merges into an existing job (that job could run before
// tx commits and miss the change). Keep tx short: it holds row locks on the
// thread's jobs it met, which delays their completion until it ends. It
// fails on a SQLite queue.
func (q *Queue) EnqueueTx(ctx context.Context, tx pgx.Tx, tenant, threadID string) error {
	if err := checkIDs(tenant, threadID); err != nil {
		return err
	}
	pg, ok := q.eng.(*pgEngine)
	if !ok {
		return fmt.Errorf("queue: EnqueueTx needs a PostgreSQL queue; this one is on %s (use Enqueue after the commit)", q.kind)
	}
	if tx == nil {
		return errors.New("queue: EnqueueTx: the transaction is nil")
	}
	if err := enqueue(ctx, pg.txOps(tx), replace, q.cfg.QueueName, tenant, threadID); err != nil {
		return fmt.Errorf("queue: enqueue thread %q of tenant %q in a transaction: %w", threadID, tenant, err)
	}
	return nil
}

func checkIDs(tenant, threadID string) error {
	switch {
	case tenant == "":
		return errors.New("queue: the tenant is empty")
	case threadID == "":
		return errors.New("queue: the thread ID is empty")
	case strings.ContainsRune(tenant, 0) || strings.ContainsRune(threadID, 0):
		return errors.New("queue: the tenant or thread ID holds a NUL byte")
	}
	return nil
}

// Stop stops fetching jobs and waits for the running ones to return, up to
// ctx, hand-offs included (one waiting on a busy thread is given to River
// at once: a job of its thread is enqueued). When ctx ends first, the running jobs' contexts are
// cancelled and Stop waits (a bounded time) for them to return, then
// reports ctx's error: their runs are left for the run service to resume.
// Calling Stop again does nothing.
func (q *Queue) Stop(ctx context.Context) error {
	q.hand.beginStop()
	err := q.eng.stop(ctx)
	if err == nil {
		err = q.hand.wait(ctx)
	}
	if err == nil {
		q.hand.cancel()
		return nil
	}
	if ctx.Err() == nil {
		return fmt.Errorf("queue: stop: %w", err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopCancelWait)
	defer cancel()
	q.hand.cancel()
	cerr := q.eng.stopAndCancel(cctx)
	if cerr == nil {
		cerr = q.hand.wait(cctx)
	}
	if cerr != nil {
		return fmt.Errorf("queue: stop: running jobs did not return within %s of being cancelled: %w", stopCancelWait, cerr)
	}
	return fmt.Errorf("queue: stop: running jobs were cancelled after the stop deadline: %w", err)
}

// pgEngine runs the queue on PostgreSQL.
type pgEngine struct {
	client *river.Client[pgx.Tx]
	pool   *pgxpool.Pool
	schema string // Config.Schema
}

// Migrate applies River's migrations to the database of cfg (SQLite or
// PostgreSQL; only the database fields of cfg are read) without starting a
// client, for `trellis migrate`. On PostgreSQL it holds the same advisory
// lock as New, so it is safe beside starting replicas.
func Migrate(ctx context.Context, cfg Config) error {
	switch {
	case cfg.SQLite != nil:
		m, err := rivermigrate.New(sqliteDriver{riversqlite.New(cfg.SQLite)}, &rivermigrate.Config{Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("queue: migrate: %w", err)
		}
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("queue: apply River's migrations on SQLite: %w", err)
		}
		return nil
	case cfg.Postgres != nil:
		if err := checkSchema(ctx, cfg); err != nil {
			return err
		}
		return migratePostgres(ctx, cfg, riverpgxv5.New(cfg.Postgres))
	}
	return errors.New("queue: Migrate needs a SQLite or a PostgreSQL database")
}

func newPostgresEngine(ctx context.Context, cfg Config, rcfg *river.Config) (*pgEngine, error) {
	if err := checkSchema(ctx, cfg); err != nil {
		return nil, err
	}
	driver := riverpgxv5.New(cfg.Postgres)
	if err := migratePostgres(ctx, cfg, driver); err != nil {
		return nil, err
	}
	client, err := river.NewClient[pgx.Tx](pgDriver{driver, cfg.Postgres}, rcfg)
	if err != nil {
		return nil, fmt.Errorf("queue: create the River client: %w", err)
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("queue: start the River client on PostgreSQL: %w", err)
	}
	return &pgEngine{client: client, pool: cfg.Postgres, schema: cfg.Schema}, nil
}

// maxSchemaLen is the longest schema name River works in: it names its
// NOTIFY channels "<schema>.river_…" and PostgreSQL keeps 63 bytes.
const maxSchemaLen = 46

// checkSchema refuses a schema River cannot use, before River fails on the
// first enqueue with "channel name too long".
func checkSchema(ctx context.Context, cfg Config) error {
	schema := cfg.Schema
	if schema == "" {
		var cur *string
		if err := cfg.Postgres.QueryRow(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
			return fmt.Errorf("queue: read the current schema: %w", err)
		}
		if cur == nil {
			return errors.New("queue: the pool's search_path names no existing schema; create it or set Config.Schema")
		}
		schema = *cur
	}
	if len(schema) > maxSchemaLen {
		return fmt.Errorf("queue: schema %q is %d bytes long; River needs at most %d (it names notification channels after it): use a shorter schema", schema, len(schema), maxSchemaLen)
	}
	return nil
}

// migratePostgres applies River's migrations holding a session advisory
// lock, so processes starting at once do not race on them.
func migratePostgres(ctx context.Context, cfg Config, driver *riverpgxv5.Driver) error {
	conn, err := cfg.Postgres.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("queue: migrate: connect to PostgreSQL: %w", err)
	}
	defer conn.Release()
	const lock = `SELECT pg_advisory_lock(hashtextextended('trellis/queue/migrate/' || current_schema(), 0))`
	if _, err := conn.Exec(ctx, lock); err != nil {
		return fmt.Errorf("queue: migrate: take the migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('trellis/queue/migrate/' || current_schema(), 0))`)
	}()
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: cfg.Logger, Schema: cfg.Schema})
	if err != nil {
		return fmt.Errorf("queue: migrate: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("queue: apply River's migrations on PostgreSQL: %w", err)
	}
	return nil
}

func (e *pgEngine) ops() jobOps {
	return jobOps{insert: e.client.Insert, del: e.client.JobDelete, retry: e.client.JobRetry}
}

func (e *pgEngine) txOps(tx pgx.Tx) jobOps { return riverTxOps(e.client, tx) }

// riverTxOps are client's calls in tx, a transaction of the caller's: the
// same on each backend but for River's transaction type.
func riverTxOps[TTx any](client *river.Client[TTx], tx TTx) jobOps {
	return jobOps{
		insert: func(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
			return client.InsertTx(ctx, tx, args, opts)
		},
		del: func(ctx context.Context, id int64) (*rivertype.JobRow, error) {
			return client.JobDeleteTx(ctx, tx, id)
		},
		retry: func(ctx context.Context, id int64) (*rivertype.JobRow, error) {
			return client.JobRetryTx(ctx, tx, id)
		},
		inTx: true,
	}
}

func (e *pgEngine) complete(ctx context.Context, job *river.Job[args]) error {
	return pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}

func (e *pgEngine) completeIn(ctx context.Context, tx any, job *river.Job[args]) error {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return fmt.Errorf("queue: complete job %d: need a pgx.Tx, got %T", job.ID, tx)
	}
	// A savepoint, so that a failing statement does not abort the
	// caller's transaction.
	return pgx.BeginFunc(ctx, ptx, func(sp pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, sp, job)
		return err
	})
}

func (e *pgEngine) stop(ctx context.Context) error          { return e.client.Stop(ctx) }
func (e *pgEngine) stopAndCancel(ctx context.Context) error { return e.client.StopAndCancel(ctx) }
