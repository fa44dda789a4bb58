package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/hoptrace"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// Config wires a Service.
type Config struct {
	DB     db.DB
	Saver  checkpoint.Saver
	Store  store.Store // may be nil
	Graphs *Registry
	Broker *Broker // nil: a new one
	// Owner names this worker in leases (default: a new ID).
	Owner string
	// LeaseTTL is how long a lease lives without renewal (default 15 s);
	// it is renewed every third of it.
	LeaseTTL time.Duration
	// CancelPoll is how often a running run checks for a cancel request
	// in the database (default 500 ms); cancels sent through this
	// process's Cancel are seen at once.
	CancelPoll time.Duration
	// RunTimeout bounds one run (0: none); it ends with status timeout.
	RunTimeout time.Duration
	// MaxRunningPerTenant caps a tenant's running runs across every
	// process sharing DB (0: no cap): a claim beyond it leaves the run
	// pending and Advance answers AtLimit. DB must implement
	// db.RunLimiter.
	MaxRunningPerTenant int
	// Wire encodes state, updates and chunks (default JSONWire).
	Wire Wire
	// Converter rewrites input and update objects (default: none).
	Converter Converter
	// Log receives the service's own log lines (default slog.Default()).
	Log *slog.Logger
	// RunContext, when set, derives the context a run's graph executes
	// with: the server puts the thread's data scope in it for the apps
	// (apps.WithScope).
	RunContext func(ctx context.Context, tenant, thread string) context.Context
	// ThreadDeleting, when set, runs first when DeleteThread deletes a
	// thread (temporary threads, on_completion delete): the server deletes
	// the data the thread's apps keep (apps.App.DeleteScope). Its error
	// stops the deletion, keeping the thread.
	ThreadDeleting func(ctx context.Context, tenant, thread string) error
	// Titler, when set, writes a thread's title after its first exchange;
	// otherwise the title is the first user message, cut short.
	Titler Titler
	// Hooks observe runs (see Hooks).
	Hooks Hooks
	// JoinStepWrites says that Saver and DB keep their tables in one
	// database, and that the saver runs internal/txhook hooks: a run's
	// events and its lease check then commit in the transaction that
	// saves each step's checkpoint or pending writes, instead of in
	// transactions of their own. DB must implement db.TxEvents.
	JoinStepWrites bool
}

// Service is the run service: it executes runs as the queue asks, keeps
// their event logs and records their outcome.
type Service struct {
	cfg     Config
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc // run ID → its cancel, in this process
	// advancing holds the runs an Advance of this process is executing,
	// from before their claim (see reserve).
	advancing map[string]struct{}
	// fresh holds runs Create noted for their thread's next Advance
	// (fresh.go), by threadKey.
	fresh map[string]freshRun
	bg    sync.WaitGroup // background work: titles (Wait)
	// txEnqueue, when set, queues a new run's job in the transaction
	// that stores the run (UseTxEnqueuer).
	txEnqueue atomic.Pointer[TxEnqueuer]
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.Saver == nil || cfg.Graphs == nil {
		return nil, errors.New("runs: a Service needs a DB, a Saver and a Registry")
	}
	if _, ok := cfg.DB.(db.RunLimiter); cfg.MaxRunningPerTenant > 0 && !ok {
		return nil, fmt.Errorf("runs: MaxRunningPerTenant is set but the DB (%T) cannot count running runs (db.RunLimiter)", cfg.DB)
	}
	if _, ok := cfg.DB.(db.TxEvents); cfg.JoinStepWrites && !ok {
		return nil, fmt.Errorf("runs: JoinStepWrites is set but the DB (%T) cannot append events in another backend's transaction (db.TxEvents)", cfg.DB)
	}
	if cfg.Broker == nil {
		cfg.Broker = NewBroker()
	}
	if cfg.Owner == "" {
		cfg.Owner = "worker-" + checkpoint.NewID()
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 15 * time.Second
	}
	if cfg.CancelPoll <= 0 {
		cfg.CancelPoll = 500 * time.Millisecond
	}
	if cfg.Wire == nil {
		cfg.Wire = JSONWire{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Service{cfg: cfg, running: map[string]context.CancelCauseFunc{}, advancing: map[string]struct{}{}}, nil
}

// Broker returns the service's event broker.
func (s *Service) Broker() *Broker { return s.cfg.Broker }

// Errors a run ends with when it is cancelled.
var (
	// ErrCancelInterrupt: the run was cancelled (action interrupt); it
	// ends with status interrupted, its finished tasks' writes kept.
	ErrCancelInterrupt = errors.New("runs: the run was cancelled")
	// ErrCancelRollback: the run was cancelled to be removed.
	ErrCancelRollback = errors.New("runs: the run was cancelled for a rollback")
	errLeaseLost      = errors.New("runs: this worker lost the run's lease")
)

// Cancel cancels a run with action "interrupt" or "rollback": at once when
// it executes in this process, else through the broker's relay (when
// there is one) to the process that executes it. It reports whether the
// run was running here. The executor also polls the database for the
// request (Config.CancelPoll), so a lost relay message only delays it.
func (s *Service) Cancel(runID, action string) bool {
	if s.CancelLocal(runID, action) {
		return true
	}
	s.cfg.Broker.relayCancel(runID, action)
	return false
}

// CancelLocal cancels a run executing in this process (a relay calls it
// with requests from other processes); it reports whether the run was
// running here.
func (s *Service) CancelLocal(runID, action string) bool {
	s.mu.Lock()
	cancel, ok := s.running[runID]
	s.mu.Unlock()
	if ok {
		cancel(cancelCause(action))
	}
	return ok
}

func cancelCause(action string) error {
	if action == "rollback" {
		return ErrCancelRollback
	}
	return ErrCancelInterrupt
}

// Execute runs a claimed run to its end under lease and records its
// outcome; the returned error is an infrastructure failure only.
//
// When ctx itself ends (the process shuts down) the run is not finished:
// it stays running under a lease that expires, and a worker takes it over
// from its last checkpoint.
func (s *Service) Execute(ctx context.Context, lease db.Lease, run db.Run) error {
	return s.execute0(ctx, lease, run, false, nil, nil)
}

// execute0 is Execute; with deferred set, run is still pending and lease
// names it without a token: the claim commits with the run's first write
// (deferredClaim), and a failed claim ends the attempt with an error
// wrapping errUnclaimed, the run left as it is. pre, when not nil, is the
// run's assistant as read with the run (nextPending). after, when not
// nil, gets what the thread has pending once the run has ended, when the
// run's finish read it (db.Pending.Known).
func (s *Service) execute0(ctx context.Context, lease db.Lease, run db.Run, deferred bool, pre *db.Assistant, after *db.Pending) error {
	hoptrace.Mark("execute")
	outer := ctx
	if s.cfg.RunContext != nil {
		ctx = s.cfg.RunContext(ctx, lease.Tenant, run.ThreadID)
	}
	end := func(db.RunStatus, error) {}
	if h := s.cfg.Hooks.Start; h != nil {
		var kw struct {
			TraceContext string `json:"trace_context"`
		}
		_ = json.Unmarshal(run.Kwargs, &kw)
		ctx, end = h(ctx, RunInfo{
			Tenant: lease.Tenant, ThreadID: run.ThreadID, RunID: run.ID, AssistantID: run.AssistantID,
			TraceContext: kw.TraceContext, CreatedAt: run.CreatedAt, NotBefore: run.NotBefore,
		})
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	s.running[run.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, run.ID)
		s.mu.Unlock()
	}()
	log := newEventLog(s.cfg.DB, s.cfg.Broker, lease)
	if s.cfg.JoinStepWrites {
		log.joint = s.cfg.DB.(db.TxEvents)
	}
	if deferred {
		log.pending = &deferredClaim{tx: s.cfg.DB.(db.TxClaimer), db: s.cfg.DB, owner: lease.Owner, ttl: s.cfg.LeaseTTL, tenant: lease.Tenant, runID: run.ID}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wg.Add(1)
	go func() { defer wg.Done(); s.watch(watchCtx, cancel, &lease, log) }()

	status, usage, res, runErr := s.execute(ctx, outer, lease, run, log, pre)
	stopWatch()
	wg.Wait()
	if res == nil {
		writeHeldFinal(ctx, log) // the run did not end as one that completed
	}
	if deferred {
		// Unclaimed, the attempt wrote nothing and the run is not ours to
		// finish; claimed only now (it wrote no step), it is.
		if err := log.claimed(context.WithoutCancel(ctx)); err != nil {
			end("", err)
			s.cfg.Log.DebugContext(ctx, "run not claimed; its attempt is dropped", "run", run.ID, "thread", run.ThreadID, "err", err)
			return err
		}
		lease = log.lease()
	}
	if outer.Err() != nil && !isCancel(context.Cause(ctx)) {
		// Shutting down: leave the run to be taken over, events kept.
		end("", runErr)
		_ = log.flush(context.WithoutCancel(ctx))
		s.cfg.Log.InfoContext(ctx, "run left for takeover: this worker is stopping", "run", run.ID, "thread", run.ThreadID)
		return nil
	}
	if errors.Is(context.Cause(ctx), errLeaseLost) {
		end("", runErr)
	} else {
		end(status, runErr)
	}
	if log.final == nil { // else the events commit with the last checkpoint
		if err := log.flush(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, db.ErrLeaseLost) {
			return err
		}
	}
	errMsg := ""
	if runErr != nil {
		errMsg = runErr.Error()
	}
	done := context.WithoutCancel(ctx)
	rollback := errors.Is(context.Cause(ctx), ErrCancelRollback)
	if rollback {
		// The run's checkpoints go before FinishRun frees the thread: the
		// next run must neither start from them nor race their removal.
		if _, err := s.cfg.Saver.DeleteRun(done, ThreadKey(lease.Tenant, run.ThreadID), run.ID); err != nil {
			return fmt.Errorf("roll back run %s: %w", run.ID, err)
		}
	}
	if res != nil {
		s.plainTitle(res, status)
	}
	var (
		finished db.Run
		th       db.Thread
		pending  db.Pending
		err      error
	)
	folded := false
	if res != nil && log.final != nil {
		// The last checkpoint, its events, the thread's result and the
		// run's end commit together.
		finished, th, pending, folded, err = s.finishFinal(done, log, status, usage, errMsg, *res)
		switch {
		case errors.Is(err, errFenced):
			err = db.ErrLeaseLost
		case err != nil:
			// Nothing of the last step was written: the run failed.
			status, errMsg, err = db.RunError, err.Error(), nil
			log.add(done, "error", errorEvent("RunError", errors.New(errMsg)))
			if ferr := log.flush(done); ferr != nil && !errors.Is(ferr, db.ErrLeaseLost) {
				return ferr
			}
			// The thread keeps the values of its last written step.
			*res = db.ThreadResult{Status: db.ThreadError, Error: errMsg}
		case !folded:
			// The saver ran no hook: the events are flushed, the end
			// is written on its own.
		}
	}
	switch {
	case folded || errors.Is(err, db.ErrLeaseLost):
	case res != nil:
		// The thread's result and the run's end commit together.
		finished, th, pending, err = s.cfg.DB.(db.ResultFinisher).FinishRunWithResult(done, log.lease(), status, usage, errMsg, *res)
	default:
		finished, err = s.cfg.DB.FinishRun(done, log.lease(), status, usage, errMsg)
	}
	if err == nil && finished.Status.Terminal() {
		// Subscribers here that saw every event up to the last need
		// read neither the log's tail nor the run back.
		hoptrace.Mark("finished")
		s.cfg.Broker.endWith(run.ID, runFinal{seq: log.lastSeq(), end: db.RunEnd{Status: finished.Status, Error: finished.Error}})
	} else {
		s.cfg.Broker.End(run.ID)
	}
	if errors.Is(err, db.ErrLeaseLost) {
		s.cfg.Log.WarnContext(ctx, "run lost its lease before finishing; another worker took it over", "run", run.ID, "thread", run.ThreadID)
		return nil
	}
	if err != nil {
		return err
	}
	if res != nil {
		s.titleAfter(done, lease.Tenant, th, res.Values, status)
	}
	if rollback {
		if err := s.rollback(done, lease.Tenant, run); err != nil {
			return err
		}
	}
	if h := s.cfg.Hooks.Finished; h != nil {
		h(done, lease.Tenant, finished)
	}
	var kw struct {
		TemporaryThread bool `json:"temporary_thread"`
	}
	if json.Unmarshal(run.Kwargs, &kw) == nil && kw.TemporaryThread {
		return s.DeleteThread(done, lease.Tenant, run.ThreadID)
	}
	if after != nil {
		*after = pending
	}
	return nil
}

// DeleteThread deletes a thread: its checkpoints, then its row with its
// runs and events. A thread already gone is not an error.
func (s *Service) DeleteThread(ctx context.Context, tenant, thread string) error {
	s.forgetFresh(tenant, thread, "")
	if s.cfg.ThreadDeleting != nil {
		if err := s.cfg.ThreadDeleting(ctx, tenant, thread); err != nil {
			return fmt.Errorf("runs: delete the app data of thread %s: %w", thread, err)
		}
	}
	if err := s.cfg.Saver.DeleteThread(ctx, ThreadKey(tenant, thread)); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return fmt.Errorf("runs: delete thread %s: %w", thread, err)
	}
	if err := s.cfg.DB.DeleteThread(ctx, tenant, thread); err != nil && !errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("runs: delete thread %s: %w", thread, err)
	}
	return nil
}

// watch renews the lease and looks for cancel requests until ctx ends.
func (s *Service) watch(ctx context.Context, cancel context.CancelCauseFunc, lease *db.Lease, log *eventLog) {
	renew := time.NewTicker(s.cfg.LeaseTTL / 3)
	defer renew.Stop()
	poll := time.NewTicker(s.cfg.CancelPoll)
	defer poll.Stop()
	l := log.lease()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			if err := log.claimed(ctx); err != nil {
				cancel(err) // not this worker's run: stop the attempt
				return
			}
			if l.Token == 0 {
				l = log.lease() // claimed with the run's first write
			}
			nl, err := s.cfg.DB.RenewLease(ctx, l, s.cfg.LeaseTTL)
			if errors.Is(err, db.ErrLeaseLost) {
				log.lose()
				cancel(errLeaseLost)
				return
			}
			if err == nil {
				l = nl
				log.setLease(nl)
			}
		case <-poll.C:
			r, err := s.cfg.DB.GetRun(ctx, l.Tenant, l.ThreadID, l.RunID)
			if err == nil && r.CancelRequested != "" {
				cancel(cancelCause(r.CancelRequested))
				return
			}
		}
	}
}

// RunUsage is what a run consumed, as the run service stores it with the
// run: the model usage of its nodes (subgraphs included) and the time it
// spent executing. After a takeover the time is the last worker's share.
type RunUsage struct {
	graph.Usage
	// DurationMS is the time the run executed, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
}

// execute runs the graph and reports the run's terminal status. outer is
// Execute's own context: when it ends the worker is stopping, and the run
// is left to be taken over rather than ended.
func (s *Service) execute(ctx, outer context.Context, lease db.Lease, run db.Run, log *eventLog, pre *db.Assistant) (db.RunStatus, json.RawMessage, *db.ThreadResult, error) {
	started := time.Now()
	fail := func(err error) (db.RunStatus, json.RawMessage, *db.ThreadResult, error) {
		log.add(ctx, "error", errorEvent("RunError", err))
		return db.RunError, nil, nil, err
	}
	var kw Kwargs
	if err := json.Unmarshal(run.Kwargs, &kw); err != nil {
		return fail(fmt.Errorf("the run's stored request does not decode: %w", err))
	}
	md, _ := json.Marshal(map[string]any{"run_id": run.ID, "thread_id": run.ThreadID})
	log.add(ctx, "metadata", md)
	ms, err := parseModes(kw.StreamMode)
	if err != nil {
		return fail(err)
	}
	a, err := s.runAssistant(ctx, lease.Tenant, run, pre)
	if err != nil {
		return fail(fmt.Errorf("assistant %s: %w", run.AssistantID, err))
	}
	g, err := s.cfg.Graphs.Graph(ctx, lease.Tenant, a)
	if err != nil {
		return fail(err)
	}
	saver := &fencedSaver{Saver: s.cfg.Saver, log: log}
	base := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(ThreadKey(lease.Tenant, run.ThreadID)), graph.WithRunID(run.ID)}
	if s.cfg.Store != nil {
		// The tenant's part of the store, as the store API shows it.
		base = append(base, graph.WithStore(TenantStore(s.cfg.Store, lease.Tenant)))
	}
	var waiting []graph.InterruptInfo
	// The worker reads the thread's latest checkpoint (a state update may
	// have landed while the run was pending) and hands that same read to
	// the engine, which starts from it instead of reading it again. record
	// uses base without it: after the run it reads afresh.
	startRef := checkpoint.Ref{ThreadID: ThreadKey(lease.Tenant, run.ThreadID)}
	head, err := saver.Get(ctx, startRef)
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return fail(err)
	}
	start := graph.WithStartCheckpoint(startRef, head)
	snap, err := g.GetState(ctx, append(slices.Clip(base), start)...)
	if lease.Token > 1 && ms[ModeMessages] {
		// Taken over: tell clients which partial messages of the dead
		// worker's attempt will not be completed.
		if err := s.discardPartials(ctx, log, lease, snap); err != nil {
			return fail(err)
		}
	}
	if err == nil {
		waiting = snap.Interrupts
		if snap.Metadata.RunID == run.ID {
			// The run wrote checkpoints before its worker died: it goes on
			// from them (a takeover), its input and command already applied.
			kw.Input, kw.Command, kw.CheckpointID = nil, nil, ""
		}
	} else if !errors.Is(err, checkpoint.ErrNotFound) {
		return fail(err)
	}
	plan, err := PlanRun(g, kw, waiting, a.Context, s.cfg.Converter)
	if err != nil {
		return fail(err)
	}
	if err := s.cfg.Graphs.checkClientTools(a, kw.ClientTools); err != nil {
		return fail(err)
	}
	ctx = tool.WithClientTools(ctx, clientSpecs(kw.ClientTools))
	if s.cfg.RunTimeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeoutCause(ctx, s.cfg.RunTimeout, context.DeadlineExceeded)
		defer cancelT()
	}
	// Task ends always: they carry the usage the run reports.
	// Task starts too, so that the log knows when a node runs.
	opts := append(append(slices.Clip(base), plan.Options...), start, graph.WithEvents(ms.kinds()|graph.EventTasks))
	if !kw.StreamSubgraphs {
		// encode drops nested runs' events but their interrupts: the
		// engine need not build them (and nodes may skip nested runs).
		opts = append(opts, graph.WithoutSubgraphEvents())
	}
	if s.foldsFinish(log) {
		// The last checkpoint commits with the run's end (finalfold.go).
		opts = append(opts, graph.WithFinalWrite(func(f *graph.FinalWrite) { log.final = f }))
	}
	if h := s.cfg.Hooks.Graph; h != nil {
		opts = append(opts, h(ctx, a.GraphID)...)
	}
	ref := RunRef{ThreadID: run.ThreadID, RunID: run.ID, AssistantID: a.ID, GraphID: a.GraphID}
	var interrupts []graph.InterruptInfo
	var streamErr error
	usage := graph.Usage{}
	for ev, err := range g.Stream(ctx, plan.Input, opts...) {
		if err != nil {
			streamErr = err
			break
		}
		if ev.Kind == graph.EventInterrupt && ev.Namespace == "" {
			interrupts = ev.Interrupts
		}
		if ev.Kind == graph.EventTaskStart && ev.Namespace == "" {
			log.taskStarted()
		}
		if ev.Kind == graph.EventTaskEnd && ev.Namespace == "" {
			usage = usage.Add(ev.Task.Usage)
			log.taskEnded()
		}
		if err := s.encode(ctx, log, ms, kw.StreamSubgraphs, ev, ref); err != nil {
			return fail(err)
		}
	}
	streamErr = settleFinal(ctx, outer, log, streamErr, len(interrupts) > 0)
	ub, _ := json.Marshal(RunUsage{Usage: usage, DurationMS: time.Since(started).Milliseconds()})
	status := db.RunSuccess
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errLeaseLost):
		return db.RunError, ub, nil, cause
	case errors.Is(cause, ErrCancelInterrupt), errors.Is(cause, ErrCancelRollback):
		status, streamErr = db.RunInterrupted, nil
	case outer.Err() != nil:
		// This worker is stopping and Execute leaves the run to be taken
		// over: no error event, or a client following the run (an
		// experiment unit joining it) would take the cut for the run's
		// end while the next worker finishes it.
		return db.RunError, ub, nil, streamErr
	case errors.Is(cause, context.DeadlineExceeded) || errors.Is(streamErr, context.DeadlineExceeded):
		// ctx has expired: the event is written without its deadline, or
		// the log would fail and the run never be finished.
		log.add(context.WithoutCancel(ctx), "error", errorEvent("TimeoutError", fmt.Errorf("the run took longer than %s", s.cfg.RunTimeout)))
		return db.RunTimeout, ub, nil, errors.New("run timed out")
	case streamErr != nil:
		log.add(ctx, "error", errorEvent("RunError", streamErr))
		status = db.RunError
	case len(interrupts) > 0:
		status = db.RunInterrupted
	}
	var res *db.ThreadResult
	if log.final != nil {
		res, err = s.finalResult(log.final)
	} else {
		res, err = s.record(context.WithoutCancel(ctx), lease, run, g, base, status, streamErr)
	}
	if err != nil {
		return db.RunError, ub, nil, err
	}
	return status, ub, res, streamErr
}

// record works out the thread's status, values and interrupts after a
// run. When the DB can record them together with the run's end
// (db.ResultFinisher) it returns them for Execute to do so; otherwise it
// writes them itself and returns nil.
func (s *Service) record(ctx context.Context, lease db.Lease, run db.Run, g *graph.Graph, base []graph.RunOption, status db.RunStatus, runErr error) (*db.ThreadResult, error) {
	res := db.ThreadResult{Status: db.ThreadIdle}
	snap, err := g.GetState(ctx, base...)
	if err == nil {
		if res.Values, err = s.cfg.Wire.State(snap.Values); err != nil {
			return nil, err
		}
		byTask := map[string][]map[string]any{}
		for _, in := range snap.Interrupts {
			key := in.ID
			byTask[key] = wireInterrupts([]graph.InterruptInfo{in})
		}
		res.Interrupts, _ = json.Marshal(byTask)
		if len(snap.Interrupts) > 0 {
			res.Status = db.ThreadInterrupted
		}
	} else if !errors.Is(err, checkpoint.ErrNotFound) {
		return nil, err
	}
	if status == db.RunError || status == db.RunTimeout {
		res.Status = db.ThreadError
		if runErr != nil {
			res.Error = runErr.Error()
		}
	}
	if _, ok := s.cfg.DB.(db.ResultFinisher); ok {
		return &res, nil
	}
	s.plainTitle(&res, status)
	th, err := s.cfg.DB.SetThreadResult(ctx, lease.Tenant, run.ThreadID, res)
	if err != nil {
		return nil, err
	}
	s.titleAfter(ctx, lease.Tenant, th, res.Values, status)
	return nil, nil
}

// plainTitle sets res's title after a run that did not fail when no
// Titler writes one: the first user message, stored with the thread's
// result (the DB keeps a title the thread has).
func (s *Service) plainTitle(res *db.ThreadResult, status db.RunStatus) {
	if s.cfg.Titler == nil && status != db.RunError && status != db.RunTimeout {
		res.Title = plainTitle(res.Values)
	}
}

// titleAfter gives the thread its title from a Titler after a run that
// did not fail; without one, the run's result carried it (plainTitle).
func (s *Service) titleAfter(ctx context.Context, tenant string, th db.Thread, values json.RawMessage, status db.RunStatus) {
	if s.cfg.Titler != nil && status != db.RunError && status != db.RunTimeout {
		s.giveTitle(ctx, tenant, th, values)
	}
}

// encode logs one engine event in the run's stream modes.
func (s *Service) encode(ctx context.Context, log *eventLog, ms modes, subgraphs bool, ev graph.Event, ref RunRef) error {
	if ev.Namespace != "" && !subgraphs && ev.Kind != graph.EventInterrupt {
		return nil
	}
	w := s.cfg.Wire
	switch ev.Kind {
	case graph.EventValues:
		if !ms[ModeValues] {
			return nil
		}
		b, err := w.State(ev.State)
		if err != nil {
			return err
		}
		log.add(ctx, eventName(ModeValues, ev.Namespace), b)
	case graph.EventUpdates:
		u, err := w.Update(ev.Update)
		if err != nil {
			return err
		}
		b, err := json.Marshal(map[string]json.RawMessage{ev.Node: u})
		if err != nil {
			return err
		}
		log.add(ctx, eventName(ModeUpdates, ev.Namespace), b)
	case graph.EventMessages:
		b, err := w.Chunk(ev, ref)
		if err != nil {
			return err
		}
		log.add(ctx, eventName("messages", ev.Namespace), b)
	case graph.EventCustom:
		b, err := json.Marshal(ev.Custom)
		if err != nil {
			return fmt.Errorf("encode a custom event of node %q: %w", ev.Node, err)
		}
		log.add(ctx, eventName(ModeCustom, ev.Namespace), b)
	case graph.EventTaskStart, graph.EventTaskEnd:
		if ms[ModeSteps] {
			b, err := stepEvent(ev)
			if err != nil {
				return err
			}
			log.add(ctx, eventName(ModeSteps, ev.Namespace), b)
		}
		if !ms[ModeTasks] && !ms[ModeDebug] {
			return nil
		}
		b, err := taskEvent(w, ev)
		if err != nil {
			return err
		}
		if ms[ModeTasks] {
			log.add(ctx, eventName(ModeTasks, ev.Namespace), b)
		}
		if ms[ModeDebug] {
			kind := "task"
			if ev.Kind == graph.EventTaskEnd {
				kind = "task_result"
			}
			d, err := debugEvent(kind, ev.Step, b)
			if err != nil {
				return err
			}
			log.add(ctx, eventName(ModeDebug, ev.Namespace), d)
		}
	case graph.EventCheckpoint:
		b, err := json.Marshal(map[string]any{"config": map[string]any{"configurable": map[string]any{"checkpoint_id": ev.Checkpoint.ID, "checkpoint_ns": ev.Checkpoint.Namespace}}, "step": ev.Step})
		if err != nil {
			return err
		}
		if ms[ModeCheckpoints] {
			log.add(ctx, eventName(ModeCheckpoints, ev.Namespace), b)
		}
		if ms[ModeDebug] {
			d, err := debugEvent("checkpoint", ev.Step, b)
			if err != nil {
				return err
			}
			log.add(ctx, eventName(ModeDebug, ev.Namespace), d)
		}
	case graph.EventInterrupt:
		if ev.Namespace != "" {
			return nil // the parent reports it as its own
		}
		b, err := json.Marshal(map[string]any{"__interrupt__": wireInterrupts(ev.Interrupts)})
		if err != nil {
			return err
		}
		mode := ModeValues
		if ms[ModeUpdates] {
			mode = ModeUpdates
		}
		log.add(ctx, mode, b)
	}
	return nil
}

// TenantStore is a tenant's part of the long-term store: every namespace
// starts with "tenant:<name>", added and removed by the view. Runs and the
// store API both use it, so what an agent remembers is what the API shows.
func TenantStore(s store.Store, tenant string) store.Store {
	return store.Prefixed(s, "tenant:"+tenant)
}

// isCancel reports whether a run was cancelled on purpose (by a person or
// a multitask strategy), as opposed to its worker stopping.
func isCancel(cause error) bool {
	return errors.Is(cause, ErrCancelInterrupt) || errors.Is(cause, ErrCancelRollback)
}
