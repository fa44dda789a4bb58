package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/db"
)

// Multitask strategies: what a new run does when its thread has a live run
// (LangGraph's double-texting).
const (
	Reject    = "reject"    // refuse the new run (the default)
	Enqueue   = "enqueue"   // run it after the live ones, in order
	Interrupt = "interrupt" // cancel the running run (keeping its finished work), then run
	Rollback  = "rollback"  // cancel the running run and remove it, then run
)

// ErrThreadBusy is returned by Create with the reject strategy when the
// thread has a live run.
var ErrThreadBusy = errors.New("runs: the thread has a run in progress; retry later or choose multitask_strategy enqueue, interrupt or rollback")

// CreateRequest asks for a run on a thread.
type CreateRequest struct {
	Tenant      string
	ThreadID    string
	AssistantID string // an assistant ID, or a graph ID (its latest assistant)
	// AssistantVersion names the assistant version to run (a Trellis
	// extension); 0 continues the version of the thread's latest run of
	// the same assistant, else runs the latest (see runVersion).
	AssistantVersion int
	Kwargs           Kwargs
	Metadata         db.Metadata
	// MultitaskStrategy is Reject (default), Enqueue, Interrupt or Rollback.
	MultitaskStrategy string
	// CreateThread creates the thread when it does not exist
	// (LangGraph's if_not_exists "create"); otherwise a missing thread is
	// db.ErrNotFound.
	CreateThread bool
	// After delays the start.
	After time.Duration
}

// Enqueuer hands a thread to the queue (server/queue), which calls Advance.
type Enqueuer func(ctx context.Context, tenant, thread string) error

// Create validates a run request against the assistant's graph and the
// thread's state (a bad request never creates a run: it is an
// *InputError), applies the multitask strategy, stores the run as pending
// and enqueues its thread.
func (s *Service) Create(ctx context.Context, enqueue Enqueuer, req CreateRequest) (db.Run, error) {
	if !ValidTenant(req.Tenant) {
		return db.Run{}, fmt.Errorf("runs: tenant %q is not a valid tenant name", req.Tenant)
	}
	strategy := req.MultitaskStrategy
	switch strategy {
	case "":
		strategy = Reject
	case Reject, Enqueue, Interrupt, Rollback:
	default:
		return db.Run{}, inputErr("/multitask_strategy", "must be reject, enqueue, interrupt or rollback, got %q", strategy)
	}
	latest, err := s.assistant(ctx, req.Tenant, req.AssistantID)
	if err != nil {
		return db.Run{}, err
	}
	th, tr, err := s.threadForRun(ctx, req.Tenant, req.ThreadID)
	existed := err == nil
	if !existed {
		tr = nil // what it says is of no thread
	}
	a, version, verr := s.runVersion(ctx, req, latest, existed, tr)
	if verr != nil {
		return db.Run{}, verr
	}
	if err := s.cfg.Graphs.checkClientTools(a, req.Kwargs.ClientTools); err != nil {
		return db.Run{}, err // before the thread is made: a refusal leaves nothing behind
	}
	// With a TxEnqueuer, the run (and a thread the request creates) are
	// stored in the transaction that queues the job, for the strategies
	// that stop no older run before it.
	var txe TxEnqueuer
	if p := s.txEnqueue.Load(); p != nil && enqueue != nil && (strategy == Reject || strategy == Enqueue) {
		txe = *p
	}
	var newThread *db.Thread // created with the run
	switch {
	case errors.Is(err, db.ErrNotFound) && req.CreateThread && txe != nil:
		th = db.Thread{ID: req.ThreadID, Status: db.ThreadIdle, Metadata: runnerMetadata(a)}
		newThread = &th
	case errors.Is(err, db.ErrNotFound) && req.CreateThread:
		th, err = s.cfg.DB.CreateThread(ctx, req.Tenant, db.Thread{ID: req.ThreadID, Status: db.ThreadIdle, Metadata: runnerMetadata(a)}, db.IfExistsDoNothing)
		if err != nil {
			return db.Run{}, err
		}
	case err != nil:
		return db.Run{}, err
	}
	g, err := s.cfg.Graphs.Graph(ctx, req.Tenant, a)
	if err != nil {
		return db.Run{}, err
	}
	// Validate now, so a bad request gets a 4xx and no run. (A command's
	// resume is checked against what waits now; enqueued behind another
	// run, it is checked again when it runs.)
	live := false // a thread not stored yet has no live run
	switch {
	case tr != nil:
		live = tr.Live // read with the thread
	case newThread == nil:
		rs, err := s.live(ctx, req.Tenant, req.ThreadID)
		if err != nil {
			return db.Run{}, err
		}
		live = len(rs) > 0
	}
	var waiting []graph.InterruptInfo
	if !live {
		// Only a command's resume is checked against what waits, so
		// only a command reads the thread's checkpoint; a thread this
		// request creates (newThread) has none to read.
		if newThread == nil && req.Kwargs.Command != nil {
			if snap, err := g.GetState(ctx, stateOpts(s, req.Tenant, req.ThreadID)...); err == nil {
				waiting = snap.Interrupts
			} else if !errors.Is(err, checkpoint.ErrNotFound) {
				return db.Run{}, err
			}
		}
		if _, err := PlanRun(g, req.Kwargs, waiting, a.Context, s.cfg.Converter); err != nil {
			return db.Run{}, err
		}
	}
	if _, err := parseModes(req.Kwargs.StreamMode); err != nil {
		return db.Run{}, err
	}
	if live && strategy == Reject {
		return db.Run{}, ErrThreadBusy
	}
	if h := s.cfg.Hooks.TraceContext; h != nil {
		req.Kwargs.TraceContext = h(ctx)
	}
	kw, err := json.Marshal(req.Kwargs)
	if err != nil {
		return db.Run{}, err
	}
	run := db.Run{
		ID: checkpoint.NewID(), ThreadID: req.ThreadID, AssistantID: a.ID, Status: db.RunPending,
		Metadata: req.Metadata, Kwargs: kw, MultitaskStrategy: strategy, AssistantVersion: version,
	}
	if req.After > 0 {
		run.NotBefore = time.Now().Add(req.After)
	}
	var (
		created db.Run
		enqErr  error // the job of a run stored with it could not be made sure of
	)
	tagged := !needsTag(th, a) // a thread this request creates has its tags
	if txe != nil {
		// The thread's tags commit with the run, in the same
		// transaction, where the DB can.
		var tag *db.Assistant
		if _, ok := s.cfg.DB.(db.TxThreadTagger); ok && !tagged {
			tag, tagged = &a, true
		}
		var fresh **db.Assistant
		if !live && run.NotBefore.IsZero() {
			var pre *db.Assistant // as nextPending reads it: nil for a run naming a version
			if version == 0 {
				pre = &a
			}
			fresh = &pre
		}
		var stored bool
		created, stored, enqErr = s.acceptTx(ctx, txe, req.Tenant, newThread, run, tag, fresh)
		if !stored {
			return db.Run{}, enqErr
		}
	} else if created, err = s.cfg.DB.CreateRun(ctx, req.Tenant, run); err != nil {
		return db.Run{}, err
	}
	// The strategy is applied once the run is stored, against the runs
	// stored before it, so that concurrent creates agree (see settle).
	serr := s.settle(ctx, req.Tenant, created, strategy)
	if errors.Is(serr, ErrThreadBusy) {
		return db.Run{}, serr
	}
	if tagged {
		// Stored with the run, or there already.
	} else if err := s.tagThread(ctx, req.Tenant, th, a); err != nil {
		s.cfg.Log.WarnContext(ctx, "runs: the thread's graph_id and assistant_id were not recorded in its metadata", "thread", th.ID, "run", created.ID, "err", err)
	}
	if txe == nil && enqueue != nil {
		enqErr = enqueue(ctx, req.Tenant, req.ThreadID)
	}
	if enqErr != nil {
		return created, fmt.Errorf("runs: run %s is stored but could not be queued (it runs when the thread is next advanced): %w", created.ID, enqErr)
	}
	if serr != nil {
		return created, fmt.Errorf("runs: run %s is stored but the runs before it could not all be stopped (%s): %w", created.ID, strategy, serr)
	}
	return created, nil
}

// threadForRun reads the thread a run is asked for; when the DB reads
// what the run needs to know of the thread's runs with it
// (db.ThreadRunReader), tr holds that, else it is nil and the caller
// reads them.
func (s *Service) threadForRun(ctx context.Context, tenant, thread string) (th db.Thread, tr *db.ThreadRuns, err error) {
	r, ok := s.cfg.DB.(db.ThreadRunReader)
	if !ok {
		th, err = s.cfg.DB.GetThread(ctx, tenant, thread)
		return th, nil, err
	}
	th, runs, err := r.GetThreadForRun(ctx, tenant, thread)
	return th, &runs, err
}

// runnerMetadata is what a run records in its thread's metadata: the
// graph and the assistant that last ran on it (LangGraph's keys, by which
// clients such as Agent Chat UI list a graph's threads).
func runnerMetadata(a db.Assistant) db.Metadata {
	return db.Metadata{"graph_id": a.GraphID, "assistant_id": a.ID}
}

// tagThread merges runnerMetadata into the thread's metadata, replacing
// those two keys (the latest run's assistant wins, as in LangGraph) and
// keeping the others; a thread that has them already is not written.
func (s *Service) tagThread(ctx context.Context, tenant string, th db.Thread, a db.Assistant) error {
	if !needsTag(th, a) {
		return nil
	}
	_, err := s.cfg.DB.UpdateThreadMetadata(ctx, tenant, th.ID, runnerMetadata(a))
	return err
}

// needsTag reports whether th's metadata does not name a and its graph
// (runnerMetadata) yet.
func needsTag(th db.Thread, a db.Assistant) bool {
	return th.Metadata["graph_id"] != a.GraphID || th.Metadata["assistant_id"] != a.ID
}

// assistant finds an assistant by ID, or the latest assistant of a graph
// when id is a graph ID (as LangGraph allows).
func (s *Service) assistant(ctx context.Context, tenant, id string) (db.Assistant, error) {
	if r, ok := s.cfg.DB.(db.AssistantResolver); ok {
		// One read for both.
		a, err := r.ResolveAssistant(ctx, tenant, id)
		if errors.Is(err, db.ErrNotFound) {
			return db.Assistant{}, fmt.Errorf("assistant %q: %w (neither an assistant ID nor a graph with an assistant)", id, db.ErrNotFound)
		}
		return a, err
	}
	a, err := s.cfg.DB.GetAssistant(ctx, tenant, id)
	if err == nil || !errors.Is(err, db.ErrNotFound) {
		return a, err
	}
	found, serr := s.cfg.DB.SearchAssistants(ctx, tenant, db.AssistantQuery{GraphID: id, Query: db.Query{Limit: 1, SortBy: "created_at", SortOrder: "asc"}})
	if serr != nil {
		return db.Assistant{}, serr
	}
	if len(found) == 0 {
		return db.Assistant{}, fmt.Errorf("assistant %q: %w (neither an assistant ID nor a graph with an assistant)", id, db.ErrNotFound)
	}
	return found[0], nil
}

// live lists the thread's pending and running runs. Pending ones are
// read first: a run claimed between the two reads then shows as pending
// or as running, never as neither (runs only go pending → running).
func (s *Service) live(ctx context.Context, tenant, thread string) ([]db.Run, error) {
	var out []db.Run
	for _, st := range []db.RunStatus{db.RunPending, db.RunRunning} {
		rs, err := s.cfg.DB.ListRuns(ctx, tenant, thread, db.RunQuery{Status: st, Limit: 1000})
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// rollback removes a cancelled run's events and row (Execute removed its
// checkpoints, every namespace, before finishing it).
func (s *Service) rollback(ctx context.Context, tenant string, run db.Run) error {
	if _, err := s.cfg.DB.DeleteEvents(ctx, tenant, run.ID); err != nil {
		return fmt.Errorf("roll back run %s: %w", run.ID, err)
	}
	if err := s.cfg.DB.DeleteRun(ctx, tenant, run.ThreadID, run.ID); err != nil {
		return fmt.Errorf("roll back run %s: %w", run.ID, err)
	}
	return nil
}

// stateOpts are the options that read a tenant's thread.
func stateOpts(s *Service, tenant, thread string) []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(s.cfg.Saver), graph.WithThread(ThreadKey(tenant, thread))}
}
