// Package server wires the Trellis agent service together: the database
// (one SQLite file by default, or PostgreSQL), the run service
// (server/runs) with LangChain's message wire, the run queue on River
// (server/queue), the sweepers that take over runs of dead workers and
// expire threads whose TTL ran out, and the LangGraph-compatible HTTP API
// (server/api). `trellis serve` is
// this package plus the bundled apps; a Go program serves its own graphs
// the same way:
//
//	srv, err := server.New(ctx, server.Config{Addr: "127.0.0.1:2024"})
//	if err != nil { ... }
//	err = srv.Register("echo", runs.GraphSpec{New: newEchoGraph})
//	if err != nil { ... }
//	err = srv.Run(ctx) // until ctx ends (SIGINT/SIGTERM), then shuts down
//
// Register every graph before Run; Run creates one default assistant per
// graph (if absent), starts the queue and serves until ctx is done.
// RegisterApps adds the bundled apps, RegisterAgent the configurable tool
// agent over MCP servers.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/a2aapi"
	"github.com/trellis-agents/trellis/server/aguiapi"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/limit"
	"github.com/trellis-agents/trellis/server/internal/redisrelay"
	"github.com/trellis-agents/trellis/server/internal/telemetry"
	"github.com/trellis-agents/trellis/server/mcpapi"
	"github.com/trellis-agents/trellis/server/openaiapi"
	"github.com/trellis-agents/trellis/server/queue"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/store"
)

// DefaultAddr is the address of a Config that names none (LangGraph's dev
// server's port).
const DefaultAddr = "127.0.0.1:2024"

// Config configures a Server. The zero value serves on DefaultAddr with the
// data in DefaultDatabase.
type Config struct {
	// Addr is host:port to listen on (DefaultAddr when ""). Port 0 picks a
	// free port; Addr() reports it once Ready() is closed.
	Addr string
	// Database is a SQLite file path, sqlite://PATH, or a postgres:// URL
	// (DefaultDatabase when ""). On SQLite one file holds the store of
	// record, the checkpoints, the store and River's jobs.
	Database string
	// DataDir is where graphs keep other files (the apps' sample
	// databases). Default: the SQLite file's directory, or ./.trellis on
	// PostgreSQL.
	DataDir string
	// Assistants are created at start when absent and updated (a new
	// version) when they differ, in the default tenant, after each
	// registered graph's default assistant. Their GraphID must be
	// registered.
	Assistants []db.Assistant
	// Scripted says the graphs answer from scripted demo models, not a
	// real one: logged loudly at start and reported by /info.
	Scripted bool
	// Version is reported by /info ("dev" when "").
	Version string
	// Logger receives the server's logs (slog.Default() when nil).
	Logger *slog.Logger
	// MCPStateless serves /mcp without sessions (mcpapi.Handler.Stateless).
	MCPStateless bool
	// A2APublicCard serves the A2A agent cards without an API key
	// (config a2a.public_card; docs/a2a.md).
	A2APublicCard bool
	// ShutdownGrace is how long a shutdown waits for requests and running
	// steps before cancelling them (10 s when 0).
	ShutdownGrace time.Duration
	// LeaseTTL is how long a running run's lease lives without renewal
	// (the run service's default, 15 s, when 0). A run of a dead process
	// is taken over within LeaseTTL + SweepInterval.
	LeaseTTL time.Duration
	// SweepInterval is how often expired leases are looked for (5 s when
	// 0).
	SweepInterval time.Duration
	// ThreadTTL is the TTL of threads created without one (nil: they live
	// until deleted). A thread expires that long after its last activity
	// (creation, a run, a state or metadata update) and is then deleted,
	// or pruned to its latest checkpoint, by the thread sweeper.
	ThreadTTL *db.TTL
	// ThreadSweepInterval is how often expired threads are looked for
	// (DefaultThreadSweepInterval when 0).
	ThreadSweepInterval time.Duration
	// ThreadSweepBatch bounds the threads one sweep expires, and the
	// threads one retention sweep visits (DefaultThreadSweepBatch when 0).
	ThreadSweepBatch int
	// Retention is the default checkpoint retention policy of threads
	// (the zero value keeps every checkpoint), applied by the thread
	// sweeper to ThreadSweepBatch threads per ThreadSweepInterval.
	Retention checkpoint.Retention
	// AssistantRetention overrides Retention, by assistant ID, for the
	// threads whose last run was that assistant's.
	AssistantRetention map[string]checkpoint.Retention
	// OnlineEvaluators score a sample of an assistant's successful runs
	// after they finish, by assistant ID; the scores are stored as the
	// runs' feedback (see docs/eval.md, "Online evaluators").
	OnlineEvaluators map[string][]OnlineEvaluator
	// RetentionProtect, when set, names more checkpoints of a thread that
	// retention keeps (an experiment's or a dataset case's), beyond those
	// of live runs, pending interrupts and metadata the server finds.
	RetentionProtect func(ctx context.Context, tenant, threadID string) ([]string, error)
	// Webhooks configures the webhooks runs ask for (webhook on run
	// create).
	Webhooks Webhooks
	// CronInterval is how often crons whose slot has come are looked
	// for (DefaultCronInterval when 0).
	CronInterval time.Duration
	// Workers is how many threads advance at once (the queue's default
	// when 0).
	Workers int
	// UnitTimeout bounds one attempt of an experiment unit, its case and
	// then its scoring (api.UnitTimeout + 2 min when 0). A unit held by a
	// killed replica is tried again on another about twice this long (at
	// most a minute more) after its attempt began; tests shorten it.
	UnitTimeout time.Duration
	// BodyLimit bounds request bodies (Limits.MaxBodyBytes, else the wire
	// package's default, when 0).
	BodyLimit int64
	// Redis is a redis:// URL ("" for none). With several replicas on one
	// PostgreSQL it carries live events and cancel requests between them
	// (streams read the durable log each second as well, so Redis may
	// restart without losing events); the server fails to start when it
	// does not answer.
	Redis string
	// Titler writes a thread's title after its first exchange (nil: the
	// first user message, cut short). Models.Titler gives one on the
	// default model.
	Titler runs.Titler
	// StoreIndex, when set, makes the long-term store embed the items put
	// into it and answer POST /store/items/search's query by similarity
	// (scores in the results); cmd/trellis builds it from trellis.yaml's
	// store.index. Without it a query is a substring match.
	StoreIndex *store.IndexConfig
	// TracerProvider makes the spans of requests, runs, steps, nodes and
	// model and tool calls. When nil, spans are exported over OTLP/HTTP if
	// OTLPEndpoint or the OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT environment
	// variable names a collector, and none are made otherwise.
	TracerProvider trace.TracerProvider
	// OTLPEndpoint is the OTLP/HTTP collector's base URL
	// (http://collector:4318) when TracerProvider is nil.
	OTLPEndpoint string
	// NoMetrics leaves /metrics unserved (it is served by default).
	NoMetrics bool
	// Auth, CORS and Limits are trellis.yaml's security sections: API-key
	// auth, CORS for browsers on other origins, and per-tenant limits (see
	// docs/serve.md, "Security").
	Auth   config.Auth
	CORS   config.CORS
	Limits config.Limits
	// InsecureNoAuth lets a server without API keys listen on an address
	// other than loopback; without it Run refuses to.
	InsecureNoAuth bool
	// WarnAuthOff logs a warning at start when auth is off on a loopback
	// address (no API key exists), with how to create one with the
	// trellis command; trellis serve sets it. Without it that state is
	// logged at debug level only: a library's own main decides what its
	// users are told.
	WarnAuthOff bool
}

// Webhooks configures the POST the server sends when a run with a
// webhook ends: a River job, retried with exponential backoff.
type Webhooks struct {
	// Secret, when set, signs bodies: X-Trellis-Signature is "sha256="
	// and the hex HMAC-SHA256 of the body.
	Secret string
	// AllowPrivate allows URLs reaching loopback, private and link-local
	// addresses, refused by default (at run create, and again when sent).
	AllowPrivate bool
	// Attempts bounds the attempts of one webhook (5 when 0); RetryBase
	// is the wait after the first failure, doubled after each next one
	// (10 s when 0).
	Attempts  int
	RetryBase time.Duration
}

// Server is the agent service. Create it with New, Register graphs, then
// Run it once.
type Server struct {
	cfg    Config
	log    *slog.Logger
	st     *storage
	graphs *runs.Registry
	svc    *runs.Service
	owner  string
	tel    *telemetry.Telemetry

	ready chan struct{}
	mu    sync.Mutex
	addr  string
	ran   bool
	// enqueue is the queue's Enqueue while Run serves.
	enqueue runs.Enqueuer
	// crons fires scheduled runs while Run serves.
	crons *cronLoop
	// webhooks enqueues a webhook job while Run serves (nil before).
	webhooks func(ctx context.Context, job queue.WebhookJob) error
	// a2a builds the A2A push notifications of finished runs (nil before
	// Run serves).
	a2a    *a2aapi.Handler
	served bool // Run got as far as listening
	// closers release what graph constructors acquired (OnClose).
	closers []func() error
	// scopeDeleters are the built apps' DeleteScope, by tenant and
	// assistant ID (see deleteAppData).
	scopeDeleters map[[2]string]func(ctx context.Context, scope string) error
	// models are the models RegisterApps or RegisterAgent was given (nil:
	// none), which assistants' configs are checked against.
	models *Models
	// mux is the API's mux once Run built it (tests walk its routes).
	mux *routeMux
	// heldAtLimit counts the times a job found its tenant at
	// max_concurrent_runs and snoozed.
	heldAtLimit atomic.Int64
	// rdb is the Redis the replicas share (nil: none); the request rate
	// limit is kept there.
	rdb *goredis.Client
	// retain is where the checkpoint retention sweep goes on from.
	retain retentionCursor
	// onlineEnqueue stores a sample to score while Run serves (nil
	// before).
	onlineEnqueue func(context.Context, queue.OnlineJob) error
	// onlineEnqueueTx stores a finishing run's samples in its finish
	// transaction while Run serves (nil before).
	onlineEnqueueTx func(context.Context, any, []queue.OnlineJob) error
	// sampleAPI scores the samples (nil until the handler is built).
	sampleAPI atomic.Pointer[api.API]
}

// New opens (creating or migrating) the database and builds the run
// service; nothing listens and no job runs until Run. Close the Server if
// Run is never called.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = slog.New(telemetry.LogHandler(cfg.Logger.Handler()))
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = 5 * time.Second
	}
	if cfg.CronInterval <= 0 {
		cfg.CronInterval = DefaultCronInterval
	}
	if t := cfg.ThreadTTL; t != nil && (t.Duration <= 0 || (t.Strategy != db.TTLDelete && t.Strategy != db.TTLKeepLatest)) {
		return nil, fmt.Errorf("server: thread TTL %s with strategy %q: want a positive duration and %q or %q", t.Duration, t.Strategy, db.TTLDelete, db.TTLKeepLatest)
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = cfg.Limits.MaxBodyBytes
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("server: address %q is not host:port (e.g. %s): %w", cfg.Addr, DefaultAddr, err)
	}
	st, err := openStorage(ctx, cfg.Database, cfg.StoreIndex)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Dir(DefaultDatabase)
		if st.file != "" {
			cfg.DataDir = filepath.Dir(st.file)
		}
	}
	s := &Server{cfg: cfg, log: cfg.Logger, st: st, graphs: runs.NewRegistry(0), ready: make(chan struct{})}
	if err := s.openTelemetry(ctx); err != nil {
		st.close()
		return nil, fmt.Errorf("server: %w", err)
	}
	host, _ := os.Hostname()
	s.owner = fmt.Sprintf("serve-%s-%d-%s", host, os.Getpid(), checkpoint.NewID())
	hooks := s.tel.Hooks()
	hooks.Finished = s.runFinished
	s.svc, err = runs.New(runs.Config{
		DB: st.db, Saver: st.saver, Store: st.store, Graphs: s.graphs,
		Owner: s.owner, LeaseTTL: cfg.LeaseTTL, RunTimeout: cfg.Limits.RunTimeout,
		MaxRunningPerTenant: cfg.Limits.MaxConcurrentRuns,
		Wire:                runs.LCWire{}, Converter: runs.LCConverter(),
		Log: s.log, Titler: cfg.Titler, Hooks: hooks,
		// The saver and the service's tables share the database (one file,
		// or one PostgreSQL pool): a step's events commit with it.
		JoinStepWrites: true,
		// An app's own data (the scheduler's calendar) is kept per thread.
		RunContext: func(ctx context.Context, tenant, thread string) context.Context {
			return apps.WithScope(ctx, runs.ThreadKey(tenant, thread))
		},
		// ... and deleted with the thread.
		ThreadDeleting: func(ctx context.Context, tenant, thread string) error {
			ids, err := s.threadAssistants(ctx, tenant, thread)
			if err != nil {
				return err
			}
			return s.deleteScopes(ctx, tenant, thread, ids)
		},
	})
	if err != nil {
		st.close()
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.Redis != "" {
		if err := s.connectRedis(ctx, cfg.Redis); err != nil {
			st.close()
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	return s, nil
}

// connectRedis relays the run service's live events and cancel requests
// to the other replicas through the Redis at url.
func (s *Server) connectRedis(ctx context.Context, url string) error {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("redis %q: %w (write redis://[:PASSWORD@]HOST:PORT[/DB])", url, err)
	}
	rdb := goredis.NewClient(opts)
	b := s.svc.Broker()
	r, err := redisrelay.New(ctx, rdb, "", s.owner, redisrelay.Handler{Deliver: b.Deliver, Ended: b.Ended, Cancel: s.svc.CancelLocal}, s.log)
	if err != nil {
		rdb.Close()
		return fmt.Errorf("redis %s: %w", opts.Addr, err)
	}
	b.SetRelay(r, time.Second)
	s.rdb = rdb
	s.OnClose(func() error { return errors.Join(r.Close(), rdb.Close()) })
	return nil
}

// Register adds a graph under graphID; Run gives it a default assistant.
// It must be called before Run.
func (s *Server) Register(graphID string, spec runs.GraphSpec) error {
	s.mu.Lock()
	ran := s.ran
	s.mu.Unlock()
	if ran {
		return fmt.Errorf("server: graph %q registered after Run; register every graph first", graphID)
	}
	return s.graphs.Register(graphID, spec)
}

// OnClose adds fn to what the Server runs when it stops (last added runs
// first): for resources a graph constructor acquires.
func (s *Server) OnClose(fn func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closers = append(s.closers, fn)
}

// SQLiteFile is the SQLite file the server keeps its data in, "" on
// PostgreSQL. Graphs with tables of their own may keep them there.
func (s *Server) SQLiteFile() string { return s.st.file }

// DataDir is the directory for graphs' other files (Config.DataDir).
func (s *Server) DataDir() string { return s.cfg.DataDir }

// Ready is closed once Run listens; Addr is then the address served.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the address Run listens on ("" before Ready is closed).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Close releases the database and what graphs acquired. Run calls it when
// it returns; call it yourself only if Run is never called.
func (s *Server) Close() error {
	s.mu.Lock()
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i]())
	}
	if s.st != nil {
		errs = append(errs, s.st.close())
	}
	return errors.Join(errs...)
}

// ErrAddrInUse matches (errors.Is) Run's error when the address is taken.
var ErrAddrInUse = errors.New("the address is in use")

// addrInUse is that error as one line, with no chain of causes to show.
type addrInUse struct{ addr string }

func (e *addrInUse) Error() string {
	return fmt.Sprintf("%s is in use (another server is listening there); pass --addr HOST:PORT to use another, e.g. --addr 127.0.0.1:2025", e.addr)
}

func (e *addrInUse) Is(target error) bool { return target == ErrAddrInUse }

// Run creates the default assistants, starts the queue and the lease
// sweeper, re-enqueues threads that have pending runs, and serves HTTP
// until ctx is done or serving fails. Then it shuts down: it stops
// accepting, lets requests and running steps finish for ShutdownGrace,
// cancels what remains, stops the queue and closes the database. Run may
// be called once.
func (s *Server) Run(ctx context.Context) (err error) {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return errors.New("server: Run was already called")
	}
	s.ran = true
	s.mu.Unlock()
	defer func() {
		if err != nil && ctx.Err() != nil && !s.served {
			// Stopped (Ctrl-C) while starting: not a failure.
			s.log.Info("stopped before serving", "cause", err)
			err = nil
		}
		if cerr := s.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()

	if err := s.ensureAssistants(ctx); err != nil {
		return err
	}
	forceAuth, err := s.checkExposure(ctx)
	if err != nil {
		return err
	}
	ln, err := listen(s.cfg.Addr)
	if err != nil {
		return err
	}
	// Jobs run on a context only the shutdown ends (queue.Stop cancels
	// them after the grace period).
	life := context.WithoutCancel(ctx)
	var q *queue.Queue
	advance := advanceFunc(s.svc, func(ctx context.Context, tenant, thread string, next runs.Next) error {
		if next.Known { // read with the run's last look at its thread
			if next.At.IsZero() {
				return nil
			}
			return q.EnqueueAt(ctx, tenant, thread, next.At)
		}
		return s.scheduleDelayed(ctx, q, tenant, thread)
	}, func() { s.heldAtLimit.Add(1); s.tel.HeldAtLimit() })
	advance = s.onlineAtFinish(advance)
	// Experiment units are worked by the API the handler builds below;
	// a unit picked up before it exists is tried again shortly.
	var unitAPI atomic.Pointer[api.API]
	unit := func(ctx context.Context, job queue.UnitJob) error {
		a := unitAPI.Load()
		if a == nil {
			return errors.New("server: the API is not ready for experiment units yet")
		}
		return a.RunExperimentUnit(ctx, job.Tenant, job.ExperimentID, job.Index, job.Attempt)
	}
	unitTimeout := cmp.Or(s.cfg.UnitTimeout, api.UnitTimeout+2*time.Minute) // the case, then its scoring
	// A run handed off to this process is insured by its pre-claim, a
	// lease the sweeper watches, which the hand-off renews until the claim.
	var preClaims queue.PreClaimRenewer
	if pc, ok := s.st.db.(db.PreClaimer); ok {
		preClaims = pc
	}
	q, err = queue.New(life, queue.Config{
		Owner: s.owner, PreClaims: preClaims,
		Online: s.scoreSample(&s.sampleAPI),
		SQLite: s.st.river, Postgres: s.st.pool,
		Advance: advance, Workers: s.cfg.Workers, Unit: unit, UnitTimeout: unitTimeout, RescueStuckJobsAfter: min(queue.DefaultRescueStuckJobsAfter, unitTimeout),
		Webhook: s.sendWebhook, WebhookAttempts: s.cfg.Webhooks.Attempts, WebhookRetryBase: s.cfg.Webhooks.RetryBase,
		Logger: slog.New(atLeast{s.log.Handler(), slog.LevelWarn}).With("component", "queue"),
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("server: start the run queue: %w", err)
	}
	if err := s.svc.UseTxEnqueuer(q.EnqueueWith); err != nil {
		ln.Close()
		return errors.Join(err, q.Stop(life))
	}
	s.mu.Lock()
	s.webhooks = q.EnqueueWebhook
	s.mu.Unlock()
	sw := newSweeper(s, q.Enqueue)
	cl := &cronLoop{s: s}
	stopQueue := func() error {
		cl.stop()
		grace, cancel := context.WithTimeout(life, s.cfg.ShutdownGrace)
		defer cancel()
		swErr := sw.stop(grace)
		qErr := q.Stop(grace)
		if qErr != nil && grace.Err() != nil {
			// Steps still running after the grace period were cancelled:
			// the shutdown working as documented, not a failure.
			s.log.Warn("running steps were cancelled after the grace period", "err", qErr)
			qErr = nil
		}
		return errors.Join(swErr, qErr)
	}
	if err := s.requeuePending(ctx, q); err != nil {
		ln.Close()
		return errors.Join(err, stopQueue())
	}
	sw.start(life)

	handler, a, err := s.handler(q.Enqueue, forceAuth)
	if err != nil {
		ln.Close()
		return errors.Join(err, stopQueue())
	}
	a.EnqueueUnit = func(ctx context.Context, tenant, experimentID string, index int) error {
		return q.EnqueueUnit(ctx, queue.UnitJob{Tenant: tenant, ExperimentID: experimentID, Index: index})
	}
	unitAPI.Store(a)
	s.sampleAPI.Store(a)
	s.mu.Lock()
	s.onlineEnqueue = q.EnqueueOnline
	s.onlineEnqueueTx = q.EnqueueOnlineTx
	s.mu.Unlock()
	cl.fire = a.FireCron
	cl.start(life)
	base, cancelBase := context.WithCancel(life)
	defer cancelBase()
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.enqueue = q.Enqueue
	s.crons = cl
	s.served = true
	s.mu.Unlock()
	s.banner()
	close(s.ready)

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down: no new requests; running steps get a grace period", "grace", s.cfg.ShutdownGrace)
	case serveErr = <-served:
		s.log.Error("serving stopped", "err", serveErr)
	}

	// Stop accepting and let requests end; running steps get the same
	// grace in parallel. Streams still open after it are cut.
	var wg sync.WaitGroup
	var queueErr error
	wg.Add(1)
	go func() { defer wg.Done(); queueErr = stopQueue() }()
	grace, cancel := context.WithTimeout(life, s.cfg.ShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(grace); err != nil {
		cancelBase()
		hs.Close()
	}
	wg.Wait()
	s.svc.Wait() // titles being written
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return errors.Join(fmt.Errorf("server: %w", serveErr), queueErr)
	}
	s.log.Info("stopped")
	return queueErr
}

// listen binds addr; a taken port is one clear error saying what to do.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &addrInUse{addr}
	}
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	return ln, nil
}

// banner logs where the server listens, its database and its models.
func (s *Server) banner() {
	s.log.Info("trellis serve listening", "url", "http://"+s.addr, "database", s.st.kind+" "+s.st.where, "graphs", s.graphs.IDs(), "version", s.cfg.Version)
	if s.cfg.Scripted {
		s.log.Warn("MODELS ARE SCRIPTED: no real model is configured, so the assistants answer from canned demo scenarios. " +
			"Set OPENAI_API_KEY or ANTHROPIC_API_KEY, or name models in trellis.yaml, for real answers.")
	}
}

// handler is the API's mux behind CORS, API keys and the request rate,
// with request logging, and the API it serves. forceAuth keeps auth on
// without keys (a public address).
func (s *Server) handler(enqueue runs.Enqueuer, forceAuth bool) (http.Handler, *api.API, error) {
	a := &api.API{
		DB: s.st.db, Runs: s.svc, Graphs: s.graphs, Saver: s.st.saver, Store: s.st.store,
		Enqueue: enqueue, Scripted: s.cfg.Scripted, Version: s.cfg.Version, BodyLimit: s.cfg.BodyLimit,
		ThreadTTL: s.cfg.ThreadTTL, CheckWebhook: s.sender().Check,
		Tenant: requestTenant, ThreadDeleted: s.deleteAppData, CheckAssistantConfig: s.checkAssistantConfig,
	}
	oa := &openaiapi.Handler{
		DB: s.st.db, Runs: s.svc, Saver: s.st.saver, Enqueue: enqueue,
		BodyLimit: s.cfg.BodyLimit, Log: s.log, Tenant: requestTenant,
	}
	mh := &mcpapi.Handler{
		DB: s.st.db, Runs: s.svc, Graphs: s.graphs, Enqueue: enqueue,
		BodyLimit: s.cfg.BodyLimit, Version: s.cfg.Version, Log: s.log, Tenant: requestTenant,
		Stateless: s.cfg.MCPStateless,
	}
	ag := &aguiapi.Handler{
		DB: s.st.db, Runs: s.svc, Saver: s.st.saver, Enqueue: enqueue,
		BodyLimit: s.cfg.BodyLimit, Log: s.log, Tenant: requestTenant,
	}
	aa := &a2aapi.Handler{
		DB: s.st.db, Runs: s.svc, Saver: s.st.saver, Graphs: s.graphs, Enqueue: enqueue,
		BodyLimit: s.cfg.BodyLimit, Version: s.cfg.Version, Log: s.log, Tenant: requestTenant,
		AuthOn: s.authOn(forceAuth), CheckPushURL: s.sender().Check,
	}
	mux, err := newMux(a, oa, ag, mh, aa, func(h http.Handler) http.Handler { return s.tel.Route(requestTenant, h) }, limit.NewCounter(s.cfg.Limits.MaxStreams).OnRefused(s.refused))
	if err != nil {
		return nil, nil, err
	}
	if !s.cfg.NoMetrics {
		mux.Handle("/metrics", s.tel.Route(requestTenant, s.metricsRoute()))
	}
	s.mu.Lock()
	s.mux = mux
	s.a2a = aa
	s.mu.Unlock()
	return s.middleware(mux, forceAuth), a, nil
}

// middleware wraps the mux in what every request passes through:
// telemetry, the request log, OpenAI-shaped errors, CORS, auth, the rate
// limit and the body limit.
func (s *Server) middleware(mux http.Handler, forceAuth bool) http.Handler {
	return s.tel.Middleware(logRequests(s.log, openAIErrors(s.security(mux, forceAuth))))
}

// runSlotWait is how long a job waits for a free run slot of its tenant
// (limits.max_concurrent_runs, counted in the database at claim time, so
// across replicas): the run stays pending, as LangGraph queues runs rather
// than refusing them.
const runSlotWait = 500 * time.Millisecond

// advanceFunc adapts the run service's Advance to the queue's. When a
// thread has nothing left to run now, idle asks for a job at the start of
// its next delayed run (after_seconds), if any: next says when, when the
// service read it already.
// atLimit is called each time a run is held back by its tenant's
// max_concurrent_runs.
func advanceFunc(svc *runs.Service, idle func(ctx context.Context, tenant, thread string, next runs.Next) error, atLimit func()) queue.AdvanceFunc {
	return func(ctx context.Context, tenant, thread string) (queue.Result, error) {
		res, next, err := svc.AdvanceUntil(ctx, tenant, thread)
		switch res {
		case runs.Busy:
			return queue.Result{Outcome: queue.Busy}, err
		case runs.AtLimit:
			atLimit()
			return queue.Result{Outcome: queue.Busy, After: runSlotWait}, err
		case runs.More:
			return queue.Result{Outcome: queue.More}, err
		}
		if err == nil {
			err = idle(ctx, tenant, thread, next)
		}
		return queue.Result{Outcome: queue.Done}, err
	}
}

// atLeast drops records below min unless the handler logs debug records
// (River logs its migrations and start-up at info).
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	if h.Handler.Enabled(ctx, slog.LevelDebug) {
		return true
	}
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(as), h.min}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.min}
}
