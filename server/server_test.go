package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/server/runs"
)

var testLog = graph.NewKey("log", graph.Concat[string]())

// echoGraph appends "echo <last entry>"; an entry "block" makes the node
// wait for its context to end (counted in blocked).
func echoGraph(blocked *atomic.Int32) runs.GraphSpec {
	return runs.GraphSpec{Description: "echoes the last log entry", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(testLog)
		b.AddNode("echo", func(ctx context.Context, s graph.State) (graph.Output, error) {
			l := testLog.Get(s)
			if len(l) > 0 && l[len(l)-1] == "block" {
				blocked.Add(1)
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return graph.Writes(graph.Append(testLog, "echo "+l[len(l)-1])), nil
		})
		b.SetEntry("echo")
		b.AddEdge("echo", graph.END)
		return b.Compile()
	}}
}

// running is a Server serving in the background.
type running struct {
	s      *Server
	url    string
	cancel context.CancelFunc
	done   chan error
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// start serves cfg on 127.0.0.1:0 with the echo graph registered.
func start(t testing.TB, cfg Config, blocked *atomic.Int32) *running {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("echo", echoGraph(blocked)); err != nil {
		t.Fatal(err)
	}
	return serveInBackground(t, s)
}

// serveInBackground runs s (its graphs registered) until the test ends.
func serveInBackground(t testing.TB, s *Server) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-r.done:
		cancel()
		t.Fatalf("Run: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("the server did not start")
	}
	r.url = "http://" + s.Addr()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop shuts the server down and fails the test if Run failed.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop")
	}
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// The system routes answer; /info says the models are scripted; the
// OpenAPI document lists the API; / is the web page; unknown paths are
// problems.
func TestSystemRoutes(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), Scripted: true, Version: "1.2.3"}, nil)
	if code, body, _ := get(t, r.url+"/ok"); code != 200 || !strings.Contains(body, `"ok":true`) {
		t.Errorf("/ok: %d %s", code, body)
	}
	if code, body, _ := get(t, r.url+"/ok?check_db=1"); code != 200 {
		t.Errorf("/ok?check_db=1: %d %s", code, body)
	}
	code, body, _ := get(t, r.url+"/info")
	var info struct {
		Version        string `json:"version"`
		ScriptedModels bool   `json:"scripted_models"`
	}
	if err := json.Unmarshal([]byte(body), &info); code != 200 || err != nil || !info.ScriptedModels || info.Version != "1.2.3" {
		t.Errorf("/info: %d %s (%v)", code, body, err)
	}
	code, body, _ = get(t, r.url+"/openapi.json")
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); code != 200 || err != nil || doc.Paths["/threads/{thread_id}/runs/stream"] == nil || doc.Paths["/assistants/search"] == nil {
		t.Errorf("/openapi.json: %d, %d paths (%v)", code, len(doc.Paths), err)
	}
	code, body, hdr := get(t, r.url+"/")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(body, "/ui/app.js") {
		t.Errorf("the page at /: %d %s", code, hdr.Get("Content-Type"))
	}
	code, body, hdr = get(t, r.url+"/no/such/route")
	if code != 404 || !strings.Contains(hdr.Get("Content-Type"), "problem+json") || !strings.Contains(body, "/no/such/route") {
		t.Errorf("unknown route: %d %s %s", code, hdr.Get("Content-Type"), body)
	}
}

// Each graph gets a default assistant with a stable ID; configured
// assistants are created, and updated to a new version when their
// declaration changes across restarts; data survives a restart.
func TestAssistantsAndRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	declared := db.Assistant{ID: "loud", GraphID: "echo", Name: "Loud echo", Config: json.RawMessage(`{"configurable":{"volume":1}}`)}
	r := start(t, Config{Database: file, Assistants: []db.Assistant{declared}}, nil)
	r.stop(t)

	declared.Config = json.RawMessage(`{"configurable":{"volume":11}}`)
	r = start(t, Config{Database: file, Assistants: []db.Assistant{declared}}, nil)
	r.stop(t)
	r = start(t, Config{Database: file, Assistants: []db.Assistant{declared}}, nil) // unchanged: no new version
	r.stop(t)

	d := openDB(t, file)
	def, err := d.GetAssistant(context.Background(), api.DefaultTenant, DefaultAssistantID("echo"))
	if err != nil || def.GraphID != "echo" || def.Version != 1 || def.Metadata["created_by"] != "system" || def.Description == "" {
		t.Errorf("default assistant %+v, %v", def, err)
	}
	loud, err := d.GetAssistant(context.Background(), api.DefaultTenant, "loud")
	if err != nil || loud.Version != 2 || !strings.Contains(string(loud.Config), "11") {
		t.Errorf("declared assistant %+v, %v: want version 2 with volume 11", loud, err)
	}
}

func openDB(t *testing.T, file string) *dbsqlite.DB {
	t.Helper()
	d, err := dbsqlite.Open(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// waitRun polls a run until it is terminal.
func waitRun(t *testing.T, d db.DB, thread, id string) db.Run {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r, err := d.GetRun(context.Background(), api.DefaultTenant, thread, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s did not end", id)
	return db.Run{}
}

// A run created through the service runs on the queue; a run left pending
// while the server was down (its job lost) runs after the restart; the
// thread's data is kept across restarts.
func TestRunsOnTheQueueAndPendingRunsSurviveARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	r := start(t, Config{Database: file}, nil)
	ctx := context.Background()
	run, err := r.s.svc.Create(ctx, r.s.enqueue, runs.CreateRequest{
		Tenant: api.DefaultTenant, ThreadID: "t1", AssistantID: "echo", CreateThread: true,
		Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["one"]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, r.s.st.db, "t1", run.ID); got.Status != db.RunSuccess {
		t.Fatalf("run: %s %s", got.Status, got.Error)
	}
	r.stop(t)

	// While the server is down: a pending run with no job.
	d := openDB(t, file)
	lost, err := d.CreateRun(ctx, api.DefaultTenant, db.Run{ThreadID: "t1", AssistantID: DefaultAssistantID("echo"), Kwargs: json.RawMessage(`{"input":{"log":["two"]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	r = start(t, Config{Database: file}, nil)
	if got := waitRun(t, r.s.st.db, "t1", lost.ID); got.Status != db.RunSuccess {
		t.Fatalf("run left pending: %s %s", got.Status, got.Error)
	}
	th, err := r.s.st.db.GetThread(ctx, api.DefaultTenant, "t1")
	if want := `["one","echo one","two","echo two"]`; err != nil || !strings.Contains(string(th.Values), want) {
		t.Errorf("thread values %s (%v), want the log %s", th.Values, err, want)
	}
}

// A run whose worker died (its lease expired, never renewed) is taken
// over by the sweeper and finished.
func TestExpiredLeaseIsTakenOver(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	ctx := context.Background()
	r := start(t, Config{Database: file}, nil) // creates the default assistant
	r.stop(t)
	d := openDB(t, file)
	if _, err := d.CreateThread(ctx, api.DefaultTenant, db.Thread{ID: "t2", Status: db.ThreadIdle}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	run, err := d.CreateRun(ctx, api.DefaultTenant, db.Run{ThreadID: "t2", AssistantID: DefaultAssistantID("echo"), Kwargs: json.RawMessage(`{"input":{"log":["x"]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.ClaimRun(ctx, api.DefaultTenant, run.ID, "dead-worker", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	r = start(t, Config{Database: file, SweepInterval: 50 * time.Millisecond}, nil)
	if got := waitRun(t, r.s.st.db, "t2", run.ID); got.Status != db.RunSuccess {
		t.Fatalf("run taken over: %s %s", got.Status, got.Error)
	}
}

// Shutdown cancels a step still running after the grace period, and Run
// returns promptly (goleak checks that nothing is left behind); the run is
// left to resume, and the next start takes it over and runs the step
// again.
func TestShutdownCancelsRunningStepsAfterGrace(t *testing.T) {
	var blocked atomic.Int32
	file := filepath.Join(t.TempDir(), "t.db")
	cfg := Config{Database: file, ShutdownGrace: 300 * time.Millisecond, LeaseTTL: time.Second, SweepInterval: 100 * time.Millisecond}
	r := start(t, cfg, &blocked)
	if _, err := r.s.svc.Create(context.Background(), r.s.enqueue, runs.CreateRequest{
		Tenant: api.DefaultTenant, ThreadID: "t3", AssistantID: "echo", CreateThread: true,
		Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["block"]}`)},
	}); err != nil {
		t.Fatal(err)
	}
	for i := 0; blocked.Load() == 0; i++ {
		if i > 1000 {
			t.Fatal("the blocking step never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	began := time.Now()
	r.stop(t)
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("shutdown took %s with a 300ms grace", took)
	}
	r = start(t, cfg, &blocked)
	for i := 0; blocked.Load() < 2; i++ {
		if i > 1000 {
			t.Fatal("the interrupted run was not resumed after the restart")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.stop(t)
}

// A taken port is one clear error naming the address and --addr.
func TestAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := New(context.Background(), Config{Addr: ln.Addr().String(), Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("echo", echoGraph(nil)); err != nil {
		t.Fatal(err)
	}
	err = s.Run(context.Background())
	if !errors.Is(err, ErrAddrInUse) || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "--addr") || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v", err)
	}
}

// Mistakes in the configuration are errors that say what is wrong.
func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Addr: "nohost", Database: filepath.Join(dir, "a.db")}, `address "nohost" is not host:port`},
		{Config{Database: "mysql://x/y"}, `scheme "mysql" is not supported`},
		{Config{Database: "sqlite://"}, "names no file"},
	} {
		if s, err := New(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%+v: err = %v, want %q", c.cfg, err, c.want)
		}
	}
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(dir, "b.db"), Logger: quiet(),
		Assistants: []db.Assistant{{Name: "x", GraphID: "nosuch"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("echo", echoGraph(nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), `assistants[0] (x) names graph "nosuch", which is not registered; the graphs are echo`) {
		t.Errorf("unknown graph: %v", err)
	}
	s, err = New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(dir, "c.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no graph is registered") {
		t.Errorf("no graphs: %v", err)
	}
}

func TestParseDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "sqlite " + DefaultDatabase,
		"data/x.db":                "sqlite data/x.db",
		"sqlite://data/x.db":       "sqlite data/x.db",
		"sqlite:///abs/x.db?mode=": "sqlite /abs/x.db",
		"postgres://u:pw@h/db":     "postgres postgres://u:pw@h/db",
		"postgresql://h/db":        "postgres postgresql://h/db",
	} {
		kind, target, err := parseDatabase(in)
		if err != nil || kind+" "+target != want {
			t.Errorf("%q: %s %s %v, want %s", in, kind, target, err, want)
		}
	}
	if got := redact("postgres://u:secret@h/db"); got != "postgres://u:***@h/db" {
		t.Errorf("redact: %s", got)
	}
}

// A run delayed with after_seconds starts once its time has come, though
// the job that the create enqueued found nothing to run yet.
func TestDelayedRunStarts(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db")}, nil)
	run, err := r.s.svc.Create(context.Background(), r.s.enqueue, runs.CreateRequest{
		Tenant: api.DefaultTenant, ThreadID: "later", AssistantID: "echo", CreateThread: true,
		Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["later"]}`)}, After: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, r.s.st.db, "later", run.ID); got.Status != db.RunSuccess {
		t.Fatalf("delayed run: %s %s", got.Status, got.Error)
	}
	if took := time.Since(run.CreatedAt); took < 300*time.Millisecond {
		t.Errorf("the delayed run ended %s after its creation, before its delay", took)
	}
}

// A context that ends while the server starts stops it cleanly: no error,
// nothing left running.
func TestStopWhileStarting(t *testing.T) {
	for _, after := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register("echo", echoGraph(nil)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), after)
		err = s.Run(ctx)
		cancel()
		if err != nil {
			t.Errorf("stopped %s into the start: %v", after, err)
		}
	}
}
