package runs

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/tool"
)

var svcLog = graph.NewKey("log", graph.Concat[string]())

// env is a run service on one SQLite file (store of record and saver).
type env struct {
	t     *testing.T
	path  string // the SQLite file of db and saver
	svc   *Service
	db    *dbsqlite.DB
	saver checkpoint.Saver
	reg   *Registry
	gate  chan struct{} // the "slow" node waits for it
	ran   chan string   // every node run is reported here
}

// testGraph: "greet" appends a greeting (with the run context's user);
// "ask" interrupts when the input's log holds "ask"; "slow" waits on the
// gate; all go to END.
func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trellis.db")
	d, err := dbsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); d.Close() })
	e := &env{t: t, path: path, db: d, saver: s, gate: make(chan struct{}), ran: make(chan string, 100)}
	reg := NewRegistry(0)
	if err := reg.Register("chat", GraphSpec{New: func(_ context.Context, a Assistant) (*graph.Graph, error) {
		var conf struct {
			Greeting string `json:"greeting"`
		}
		if err := a.Configurable(&conf); err != nil {
			return nil, err
		}
		if conf.Greeting == "" {
			conf.Greeting = "hello"
		}
		b := graph.New(svcLog)
		b.AddNode("greet", func(ctx context.Context, st graph.State) (graph.Output, error) {
			e.ran <- "greet"
			who, _ := graph.RunContext[map[string]string](ctx)
			return graph.Writes(graph.Append(svcLog, conf.Greeting+" "+who["user"])), nil
		})
		b.AddNode("route", func(ctx context.Context, st graph.State) (graph.Output, error) {
			// The run's input is the entry before greet's.
			l, marker := svcLog.Get(st), ""
			if len(l) >= 2 {
				marker = l[len(l)-2]
			}
			switch {
			case strings.HasPrefix(marker, "ask"):
				v, err := graph.Interrupt[string](ctx, "what?")
				if err != nil {
					return nil, err
				}
				return graph.Writes(graph.Append(svcLog, "answer "+v)), nil
			case strings.HasPrefix(marker, "slow"):
				e.ran <- "slow"
				select {
				case <-e.gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return nil, nil
		})
		b.SetEntry("greet")
		b.AddEdge("greet", "route")
		b.AddEdge("route", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	// "tooly" accepts client tools and logs their names.
	if err := reg.Register("tooly", GraphSpec{ClientTools: true, New: func(context.Context, Assistant) (*graph.Graph, error) {
		b := graph.New(svcLog)
		b.AddNode("list", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			var names []string
			for _, sp := range tool.ClientTools(ctx) {
				names = append(names, sp.Name)
			}
			return graph.Writes(graph.Append(svcLog, "tools: "+strings.Join(names, ","))), nil
		})
		b.SetEntry("list")
		b.AddEdge("list", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	e.reg = reg
	svc, err := New(Config{DB: d, Saver: s, Graphs: reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	for _, tenant := range []string{"acme", "other"} {
		for _, a := range []db.Assistant{
			{ID: "chat-a", GraphID: "chat", Name: "A", Config: json.RawMessage(`{"configurable":{"greeting":"hi"}}`), Context: json.RawMessage(`{"user":"anon"}`)},
			{ID: "chat-b", GraphID: "chat", Name: "B", Config: json.RawMessage(`{"configurable":{"greeting":"yo"}}`), Context: json.RawMessage(`{}`)},
			{ID: "tooly-a", GraphID: "tooly", Name: "T"},
		} {
			if _, err := d.CreateAssistant(ctx, tenant, a, db.IfExistsRaise); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

func (e *env) create(tenant, thread, assistant string, kw Kwargs, strategy string) (db.Run, error) {
	return e.svc.Create(context.Background(), nil, CreateRequest{Tenant: tenant, ThreadID: thread, AssistantID: assistant, Kwargs: kw, MultitaskStrategy: strategy, CreateThread: true})
}

func (e *env) mustCreate(tenant, thread, assistant string, kw Kwargs, strategy string) db.Run {
	e.t.Helper()
	r, err := e.create(tenant, thread, assistant, kw, strategy)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// advance calls Advance as the queue's hand-off does, holding every
// run's pre-claim (txhook.WithHeld): a service with JoinStepWrites then
// executes the run before it claims it, claiming it with its first write.
func (e *env) advance(tenant, thread string) AdvanceResult {
	e.t.Helper()
	res, err := e.svc.Advance(heldCtx(), tenant, thread)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) run(tenant, thread, id string) db.Run {
	e.t.Helper()
	r, err := e.db.GetRun(context.Background(), tenant, thread, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) events(tenant, runID string) []db.Event {
	e.t.Helper()
	evs, err := e.db.ReadEvents(context.Background(), tenant, runID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// heldCtx is a context whose Advance holds every run's pre-claim.
func heldCtx() context.Context {
	return txhook.WithHeld(context.Background(), func(string, string) bool { return true })
}

func in(s string) Kwargs { return Kwargs{Input: json.RawMessage(s)} }

// Two assistants of one graph behave differently; a run logs metadata
// first, then its values; the thread records the outcome.
func TestRunSucceedsAndLogsEvents(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ assistant, want string }{{"chat-a", "hi anon"}, {"chat-b", "yo ada"}} {
		thread := "t-" + c.assistant
		kw := in(`{"log":["start"]}`)
		if c.assistant == "chat-b" {
			kw.Context = json.RawMessage(`{"user":"ada"}`)
		}
		r := e.mustCreate("acme", thread, c.assistant, kw, "")
		if got := e.advance("acme", thread); got != Idle {
			t.Errorf("advance = %v, want Idle", got)
		}
		if r = e.run("acme", thread, r.ID); r.Status != db.RunSuccess {
			t.Fatalf("status %s (%s)", r.Status, r.Error)
		}
		evs := e.events("acme", r.ID)
		if len(evs) < 2 || evs[0].Event != "metadata" || !strings.Contains(string(evs[0].Data), r.ID) {
			t.Fatalf("events %v: want metadata first", evs)
		}
		last := evs[len(evs)-1]
		if last.Event != "values" || !strings.Contains(string(last.Data), c.want) {
			t.Errorf("last event %s %s, want values with %q", last.Event, last.Data, c.want)
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Errorf("event %d has seq %d", i, ev.Seq)
			}
		}
		th, err := e.db.GetThread(context.Background(), "acme", thread)
		if err != nil || th.Status != db.ThreadIdle || !strings.Contains(string(th.Values), c.want) {
			t.Errorf("thread %+v err %v", th, err)
		}
	}
}

// A run that stops at an interrupt leaves the thread interrupted; a
// command answers it in a new run.
func TestInterruptAndCommandResume(t *testing.T) {
	e := newEnv(t)
	r := e.mustCreate("acme", "t1", "chat-a", in(`{"log":["ask"]}`), "")
	e.advance("acme", "t1")
	if r = e.run("acme", "t1", r.ID); r.Status != db.RunInterrupted {
		t.Fatalf("status %s", r.Status)
	}
	th, _ := e.db.GetThread(context.Background(), "acme", "t1")
	if th.Status != db.ThreadInterrupted || !strings.Contains(string(th.Interrupts), `"what?"`) {
		t.Errorf("thread %s interrupts %s", th.Status, th.Interrupts)
	}
	evs := e.events("acme", r.ID)
	if last := evs[len(evs)-1]; !strings.Contains(string(last.Data), "__interrupt__") {
		t.Errorf("last event %s %s: want the interrupt", last.Event, last.Data)
	}
	r2 := e.mustCreate("acme", "t1", "chat-a", Kwargs{Command: &Command{Resume: json.RawMessage(`"blue"`)}}, "")
	e.advance("acme", "t1")
	if r2 = e.run("acme", "t1", r2.ID); r2.Status != db.RunSuccess {
		t.Fatalf("resume: %s %s", r2.Status, r2.Error)
	}
	th, _ = e.db.GetThread(context.Background(), "acme", "t1")
	if th.Status != db.ThreadIdle || !strings.Contains(string(th.Values), "answer blue") {
		t.Errorf("thread %s values %s", th.Status, th.Values)
	}
}

// A bad request gets an InputError naming the field and creates no run.
func TestBadRequestCreatesNoRun(t *testing.T) {
	e := newEnv(t)
	for _, kw := range []Kwargs{in(`{"logg":[]}`), {Command: &Command{Resume: json.RawMessage(`1`)}}, {StreamMode: []string{"weird"}}} {
		_, err := e.create("acme", "bad", "chat-a", kw, "")
		var ie *InputError
		if !errors.As(err, &ie) || ie.Pointer == "" {
			t.Errorf("%+v: err = %v, want an InputError", kw, err)
		}
	}
	if rs, _ := e.db.ListRuns(context.Background(), "acme", "bad", db.RunQuery{}); len(rs) != 0 {
		t.Errorf("%d runs created", len(rs))
	}
	if _, err := e.create("acme", "bad", "no-such", in(`{}`), ""); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("unknown assistant: %v", err)
	}
	// A graph ID finds its assistant.
	if _, err := e.create("acme", "bad", "chat", in(`{}`), ""); err != nil {
		t.Errorf("by graph ID: %v", err)
	}
}

// Client tools reach a graph that accepts them through the run's
// context; any other graph refuses them, naming the assistant and graph,
// and so do unusable tools; a refusal creates no run.
func TestClientTools(t *testing.T) {
	e := newEnv(t)
	tools := []ClientTool{{Name: "pick", Description: "pick one", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "show"}}
	for _, c := range []struct {
		assistant string
		tools     []ClientTool
		want      string
	}{
		{"chat-a", tools, "the assistant chat-a (graph chat) does not accept client tools"},
		{"tooly-a", []ClientTool{{Name: "a b"}}, `tools[0]: tool name "a b"`},
		{"tooly-a", []ClientTool{{Name: "x", Parameters: json.RawMessage(`"no"`)}}, "parameters must be a JSON Schema object"},
	} {
		kw := in(`{"log":["x"]}`)
		kw.ClientTools = c.tools
		_, err := e.create("acme", "ct-bad", c.assistant, kw, "")
		var ie *InputError
		if !errors.As(err, &ie) || ie.Pointer != "/client_tools" || !strings.Contains(ie.Detail, c.want) {
			t.Errorf("%s %v: err = %v; want an InputError at /client_tools saying %q", c.assistant, c.tools, err, c.want)
		}
	}
	if rs, _ := e.db.ListRuns(context.Background(), "acme", "ct-bad", db.RunQuery{}); len(rs) != 0 {
		t.Errorf("%d runs created by refusals", len(rs))
	}
	kw := in(`{"log":["x"]}`)
	kw.ClientTools = tools
	r := e.mustCreate("acme", "ct", "tooly-a", kw, "")
	e.advance("acme", "ct")
	if got := e.run("acme", "ct", r.ID); got.Status != db.RunSuccess {
		t.Fatalf("run %s: %s", got.Status, got.Error)
	}
	th, _ := e.db.GetThread(context.Background(), "acme", "ct")
	if !strings.Contains(string(th.Values), "tools: pick,show") {
		t.Errorf("thread values %s; want the graph to have seen the client tools", th.Values)
	}
}

// Double-texting: reject refuses, enqueue runs in order.
func TestRejectAndEnqueue(t *testing.T) {
	e := newEnv(t)
	first := e.mustCreate("acme", "t", "chat-a", in(`{"log":["one"]}`), "")
	if _, err := e.create("acme", "t", "chat-a", in(`{"log":["two"]}`), Reject); !errors.Is(err, ErrThreadBusy) {
		t.Fatalf("reject: %v", err)
	}
	second := e.mustCreate("acme", "t", "chat-a", in(`{"log":["two"]}`), Enqueue)
	if got := e.advance("acme", "t"); got != More {
		t.Errorf("after the first run: %v, want More", got)
	}
	if got := e.advance("acme", "t"); got != Idle {
		t.Errorf("after the second run: %v, want Idle", got)
	}
	if e.run("acme", "t", first.ID).Status != db.RunSuccess || e.run("acme", "t", second.ID).Status != db.RunSuccess {
		t.Error("both runs should succeed")
	}
	th, _ := e.db.GetThread(context.Background(), "acme", "t")
	if !strings.Contains(string(th.Values), `"one","hi anon","two","hi anon"`) {
		t.Errorf("values %s: want the runs in order", th.Values)
	}
}

// Interrupt and rollback cancel the running run at once; rollback removes
// it with its checkpoints and events.
func TestInterruptAndRollbackStrategies(t *testing.T) {
	for _, strategy := range []string{Interrupt, Rollback} {
		t.Run(strategy, func(t *testing.T) {
			e := newEnv(t)
			slow := e.mustCreate("acme", "t", "chat-a", in(`{"log":["slow"]}`), "")
			done := make(chan AdvanceResult, 1)
			go func() {
				res, _ := e.svc.Advance(context.Background(), "acme", "t")
				done <- res
			}()
			for n := <-e.ran; n != "slow"; n = <-e.ran {
			}
			next := e.mustCreate("acme", "t", "chat-a", in(`{"log":["next"]}`), strategy)
			select {
			case res := <-done:
				// More when the new run was stored before the cancelled one
				// finished; Idle when not (the queue's enqueue at create
				// covers that case).
				if res != More && res != Idle {
					t.Errorf("the cancelled run's advance: %v, want More or Idle", res)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the running run was not cancelled")
			}
			e.advance("acme", "t")
			if e.run("acme", "t", next.ID).Status != db.RunSuccess {
				t.Error("the new run did not succeed")
			}
			r, err := e.db.GetRun(context.Background(), "acme", "t", slow.ID)
			switch strategy {
			case Interrupt:
				if err != nil || r.Status != db.RunInterrupted {
					t.Errorf("interrupted run: %+v %v", r.Status, err)
				}
			case Rollback:
				if !errors.Is(err, db.ErrNotFound) {
					t.Errorf("rolled-back run still there: %+v %v", r.Status, err)
				}
				for tup, err := range e.saver.List(context.Background(), checkpoint.Ref{ThreadID: ThreadKey("acme", "t")}, checkpoint.ListOptions{}) {
					if err == nil && tup.Metadata.RunID == slow.ID {
						t.Errorf("checkpoint %s of the rolled-back run remains", tup.Ref.ID)
					}
				}
				if evs, err := e.db.ReadEvents(context.Background(), "acme", slow.ID, 0, 0); len(evs) != 0 || (err != nil && !errors.Is(err, db.ErrNotFound)) {
					t.Errorf("%d events of the rolled-back run remain (err %v)", len(evs), err)
				}
			}
		})
	}
}

// Two tenants may use the same thread ID; their threads are apart.
func TestTenantsShareThreadIDs(t *testing.T) {
	e := newEnv(t)
	e.mustCreate("acme", "same", "chat-a", in(`{"log":["acme"]}`), "")
	e.mustCreate("other", "same", "chat-b", in(`{"log":["other"]}`), "")
	e.advance("acme", "same")
	e.advance("other", "same")
	a, _ := e.db.GetThread(context.Background(), "acme", "same")
	o, _ := e.db.GetThread(context.Background(), "other", "same")
	if strings.Contains(string(a.Values), "other") || strings.Contains(string(o.Values), "acme") {
		t.Errorf("threads mixed: acme %s other %s", a.Values, o.Values)
	}
	if !ValidTenant("acme") || ValidTenant("a/b") || ValidTenant("") {
		t.Error("ValidTenant")
	}
	if _, err := e.create("a/b", "x", "chat-a", in(`{}`), ""); err == nil {
		t.Error("a tenant with a slash was accepted")
	}
}

// A joiner replays a finished run's whole log.
func TestJoinAFinishedRun(t *testing.T) {
	e := newEnv(t)
	r := e.mustCreate("acme", "t", "chat-a", in(`{"log":["x"]}`), "")
	e.advance("acme", "t")
	var names []string
	for ev, err := range Join(context.Background(), e.db, e.svc.Broker(), "acme", r.ID, 0, func(context.Context) (bool, error) { return true, nil }) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, ev.Event)
	}
	if len(names) != len(e.events("acme", r.ID)) || names[0] != "metadata" {
		t.Errorf("joined %v", names)
	}
}

// A worker that stops (its context ends) leaves its run running, for
// another worker to take over; it is not recorded as failed.
func TestStoppingWorkerLeavesTheRunForTakeover(t *testing.T) {
	e := newEnv(t)
	r := e.mustCreate("acme", "t", "chat-a", in(`{"log":["slow"]}`), "")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.svc.Advance(ctx, "acme", "t")
		done <- err
	}()
	for n := <-e.ran; n != "slow"; n = <-e.ran {
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("advance: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop")
	}
	if got := e.run("acme", "t", r.ID); got.Status != db.RunRunning {
		t.Errorf("status %s, want running (left for takeover)", got.Status)
	}
	// Nor does its log say it failed: a client following the run would
	// take the cut for its end, while the next worker finishes it.
	for _, ev := range e.events("acme", r.ID) {
		if ev.Event == "error" {
			t.Errorf("the run left for takeover logged an error event: %s", ev.Data)
		}
	}
}

// claimingDB claims run before answering the first list of pending runs:
// a run that moves from pending to running between Create's two reads.
type claimingDB struct {
	db.DB
	t       *testing.T
	tenant  string
	run     string
	claimed bool
}

func (c *claimingDB) ListRuns(ctx context.Context, tenant, thread string, q db.RunQuery) ([]db.Run, error) {
	if q.Status == db.RunPending && !c.claimed {
		c.claimed = true
		if _, _, err := c.DB.ClaimRun(ctx, c.tenant, c.run, "w", time.Minute); err != nil {
			c.t.Fatal(err)
		}
	}
	return c.DB.ListRuns(ctx, tenant, thread, q)
}

// A run claimed while Create looks for live runs is still seen: reject
// refuses, never a second run beside it.
func TestCreateSeesARunClaimedMeanwhile(t *testing.T) {
	e := newEnv(t)
	first := e.mustCreate("acme", "t", "chat-a", in(`{"log":["one"]}`), "")
	cdb := &claimingDB{DB: e.db, t: t, tenant: "acme", run: first.ID}
	svc, err := New(Config{DB: cdb, Saver: e.saver, Graphs: e.svc.cfg.Graphs})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Create(context.Background(), nil, CreateRequest{Tenant: "acme", ThreadID: "t", AssistantID: "chat-a", Kwargs: in(`{"log":["two"]}`), MultitaskStrategy: Reject})
	if !cdb.claimed {
		t.Fatal("Create did not list pending runs")
	}
	if !errors.Is(err, ErrThreadBusy) {
		t.Fatalf("Create beside a run claimed meanwhile: %v, want ErrThreadBusy", err)
	}
}
