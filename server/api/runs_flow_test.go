package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/sse"
)

// create starts a background run and returns its ID.
func (e *runEnv) create(thread string, body map[string]any) string {
	e.t.Helper()
	if body["assistant_id"] == nil {
		body["assistant_id"] = "steps-a"
	}
	if body["if_not_exists"] == nil {
		body["if_not_exists"] = "create"
	}
	st, hdr, b := e.do("POST", "/threads/"+thread+"/runs", body)
	if st != http.StatusOK {
		e.t.Fatalf("create: %d %s", st, b)
	}
	run := decode[map[string]any](e.t, b)
	id, _ := run["run_id"].(string)
	if hdr.Get("Content-Location") != "/threads/"+thread+"/runs/"+id {
		e.t.Errorf("Content-Location %q for run %s", hdr.Get("Content-Location"), id)
	}
	return id
}

func input(words ...string) map[string]any { return map[string]any{"log": words} }

// wait interrupts at the "ask" step (answering __interrupt__), and a
// command's resume answers it in a new run.
func TestWaitInterruptAndResume(t *testing.T) {
	e := newRunEnv(t)
	st, hdr, b := e.do("POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "steps-a", "if_not_exists": "create", "input": input("ask")})
	if st != http.StatusOK {
		t.Fatalf("wait: %d %s", st, b)
	}
	if !strings.HasPrefix(hdr.Get("Content-Location"), "/threads/t1/runs/") {
		t.Errorf("Content-Location %q", hdr.Get("Content-Location"))
	}
	got := decode[map[string]json.RawMessage](t, b)
	if !strings.Contains(string(got["__interrupt__"]), `"what?"`) || !strings.Contains(string(got["log"]), `"hi"`) {
		t.Fatalf("wait answered %s: want the values and the interrupt", b)
	}
	// Answering with nothing waiting is refused before any run exists.
	st, _, b = e.do("POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "steps-a", "command": map[string]any{"resume": "yes"}})
	if st != http.StatusOK {
		t.Fatalf("resume: %d %s", st, b)
	}
	if got := decode[map[string]json.RawMessage](t, b); !strings.Contains(string(got["log"]), `"answer yes"`) || got["__interrupt__"] != nil {
		t.Errorf("resume answered %s: want the answer in the log and no interrupt", b)
	}
	st, _, b = e.do("POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "steps-a", "command": map[string]any{"resume": "again"}})
	if st != http.StatusUnprocessableEntity || !strings.Contains(string(b), "/command/resume") {
		t.Errorf("resume with nothing waiting: %d %s, want 422 naming /command/resume", st, b)
	}
}

// A failed run's wait carries __error__ {error, message}, as the SDK's
// wait() raises it.
func TestWaitReportsFailure(t *testing.T) {
	e := newRunEnv(t)
	st, _, b := e.do("POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "steps-a", "if_not_exists": "create", "input": input("fail")})
	if st != http.StatusOK {
		t.Fatalf("wait: %d %s", st, b)
	}
	got := decode[map[string]json.RawMessage](t, b)
	failure := decode[map[string]string](t, got["__error__"])
	if failure["error"] == "" || !strings.Contains(failure["message"], "failed on purpose") {
		t.Errorf("wait answered %s: want __error__ with the failure", b)
	}
}

// Rejoining mid-run with Last-Event-ID continues after that event with no
// gap and no duplicate; "-1" replays the whole run after it ended; the
// join (GET .../join) answers the final values.
func TestRejoinWithLastEventID(t *testing.T) {
	e := newRunEnv(t)
	id := e.create("t1", map[string]any{"input": input("slow"), "stream_mode": []string{"values", "updates"}})
	<-e.slow // the run is inside the slow step: its first events are logged
	ctx, cancel := context.WithCancel(context.Background())
	resp := e.open(ctx, "GET", "/threads/t1/runs/"+id+"/stream", nil)
	r := sse.NewReader(resp.Body)
	var first []sse.Event
	for len(first) < 3 {
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, ev)
	}
	cancel()
	resp.Body.Close()
	lastID := first[len(first)-1].ID
	close(e.gate)
	rest := e.events(e.open(context.Background(), "GET", "/threads/t1/runs/"+id+"/stream", nil, "Last-Event-ID", lastID))
	all := append(first, rest...)
	if all[len(all)-1].Event != "end" {
		t.Fatalf("events %v: want end last", names(all))
	}
	for i, ev := range all[:len(all)-1] {
		if ev.ID != strconv.Itoa(i+1) {
			t.Fatalf("event %d has id %q: the rejoin after %s has a gap or a duplicate (%v)", i, ev.ID, lastID, names(all))
		}
	}
	replay := e.events(e.open(context.Background(), "GET", "/threads/t1/runs/"+id+"/stream", nil, "Last-Event-ID", "-1"))
	if len(replay) != len(all) || replay[0].Event != "metadata" {
		t.Errorf("replay has %d events %v, want the %d of the run", len(replay), names(replay), len(all))
	}
	// Narrowed to updates, the rejoin keeps metadata and end.
	upd := e.events(e.open(context.Background(), "GET", "/threads/t1/runs/"+id+"/stream?stream_mode=updates", nil, "Last-Event-ID", "-1"))
	for _, ev := range upd {
		if ev.Event == "values" {
			t.Errorf("stream_mode=updates rejoin sent values: %v", names(upd))
			break
		}
	}
	st, _, b := e.do("GET", "/threads/t1/runs/"+id+"/join", nil)
	if st != http.StatusOK || !strings.Contains(string(b), `"done"`) {
		t.Errorf("join: %d %s", st, b)
	}
	st, _, b = e.do("GET", "/threads/t1/runs/"+id+"/stream", nil, "Last-Event-ID", "x")
	if st != http.StatusBadRequest {
		t.Errorf("bad Last-Event-ID: %d %s, want 400", st, b)
	}
}

// Each multitask strategy on a thread with a run in progress.
func TestMultitaskStrategies(t *testing.T) {
	e := newRunEnv(t)
	first := e.create("t1", map[string]any{"input": input("slow")})
	<-e.slow
	st, _, b := e.do("POST", "/threads/t1/runs", map[string]any{"assistant_id": "steps-a", "input": input("x"), "multitask_strategy": "reject"})
	if st != http.StatusConflict {
		t.Errorf("reject: %d %s, want 409", st, b)
	}
	queued := e.create("t1", map[string]any{"input": input("queued"), "multitask_strategy": "enqueue"})
	if s := e.run("t1", queued)["status"]; s != "pending" {
		t.Errorf("enqueued run is %v, want pending behind the running one", s)
	}
	// interrupt: every live run before it stops (interrupted): the
	// running one and the queued one (as LangGraph does); the new one runs.
	third := e.create("t1", map[string]any{"input": input("third"), "multitask_strategy": "interrupt"})
	e.waitStatus("t1", first, "interrupted")
	e.waitStatus("t1", queued, "interrupted")
	e.waitStatus("t1", third, "success")

	// rollback: the running run is removed.
	slow := e.create("t2", map[string]any{"input": input("slow")})
	<-e.slow
	next := e.create("t2", map[string]any{"input": input("after"), "multitask_strategy": "rollback"})
	e.waitStatus("t2", next, "success")
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _, _ := e.do("GET", "/threads/t2/runs/"+slow, nil)
		if st == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rolled-back run still answers %d", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, _, b = e.do("GET", "/threads/t2/runs", nil)
	if list := decode[[]map[string]any](t, b); st != http.StatusOK || len(list) != 1 || list[0]["run_id"] != next {
		t.Errorf("runs of t2: %d %s, want only %s", st, b, next)
	}
}

// Cancel with wait=1 answers when the run has stopped; a pending run is
// cancelled at once and its joiners end; bulk cancel by status.
func TestCancel(t *testing.T) {
	e := newRunEnv(t)
	id := e.create("t1", map[string]any{"input": input("slow")})
	<-e.slow
	st, _, b := e.do("POST", "/threads/t1/runs/"+id+"/cancel?wait=1&action=interrupt", nil)
	if st != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", st, b)
	}
	if s := e.run("t1", id)["status"]; s != "interrupted" {
		t.Errorf("after cancel?wait=1 the run is %v", s)
	}
	st, _, b = e.do("POST", "/threads/t1/runs/"+id+"/cancel", nil)
	if st != http.StatusConflict {
		t.Errorf("cancel of an ended run: %d %s, want 409", st, b)
	}
	st, _, b = e.do("DELETE", "/threads/t1/runs/"+id, nil)
	if st != http.StatusNoContent {
		t.Errorf("delete: %d %s", st, b)
	}

	later := e.create("t2", map[string]any{"input": input("x"), "after_seconds": 60})
	done := make(chan []sse.Event)
	joiner := e.open(context.Background(), "GET", "/threads/t2/runs/"+later+"/stream", nil)
	defer joiner.Body.Close()
	go func() { // reads only: the test goroutine fails the test
		var evs []sse.Event
		r := sse.NewReader(joiner.Body)
		for {
			ev, err := r.Next()
			if err != nil {
				done <- evs
				return
			}
			evs = append(evs, ev)
		}
	}()
	time.Sleep(50 * time.Millisecond)
	st, _, b = e.do("POST", "/runs/cancel", map[string]any{"status": "pending"})
	if st != http.StatusNoContent {
		t.Fatalf("bulk cancel: %d %s", st, b)
	}
	select {
	case evs := <-done:
		if len(evs) == 0 || evs[len(evs)-1].Event != "end" {
			t.Errorf("joiner of a cancelled pending run got %v", names(evs))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the joiner of a cancelled pending run did not end")
	}
	if s := e.run("t2", later)["status"]; s != "interrupted" {
		t.Errorf("cancelled pending run is %v", s)
	}
}

// A streaming client that leaves cancels its run (on_disconnect defaults
// to cancel for /stream); "continue" keeps it running.
func TestStreamDisconnect(t *testing.T) {
	e := newRunEnv(t)
	for _, c := range []struct{ mode, want string }{{"", "interrupted"}, {"continue", "success"}} {
		thread := "t-" + c.mode
		body := map[string]any{"assistant_id": "steps-a", "if_not_exists": "create", "input": input("slow")}
		if c.mode != "" {
			body["on_disconnect"] = c.mode
		}
		ctx, cancel := context.WithCancel(context.Background())
		resp := e.open(ctx, "POST", "/threads/"+thread+"/runs/stream", body)
		id := strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"+thread+"/runs/")
		<-e.slow
		cancel()
		resp.Body.Close()
		if c.want == "success" {
			time.Sleep(100 * time.Millisecond)
			e.gate <- struct{}{}
		}
		e.waitStatus(thread, id, c.want)
	}
}

// Stateless runs use a temporary thread, deleted when the run ends unless
// on_completion is "keep"; a batch creates several.
func TestStatelessRuns(t *testing.T) {
	e := newRunEnv(t)
	// A refused stateless run leaves no temporary thread behind.
	before, err := e.db.CountThreads(context.Background(), DefaultTenant, db.ThreadQuery{})
	if err != nil {
		t.Fatal(err)
	}
	st, _, b := e.do("POST", "/runs/batch", []map[string]any{{"assistant_id": "steps-a", "input": map[string]any{"nope": 1}}})
	if st != http.StatusUnprocessableEntity || !strings.Contains(string(b), "run 0 of the batch") {
		t.Errorf("bad batch: %d %s", st, b)
	}
	st, _, b = e.do("POST", "/runs/wait", map[string]any{"assistant_id": "steps-a", "input": map[string]any{"nope": 1}})
	if st != http.StatusUnprocessableEntity {
		t.Errorf("bad stateless wait: %d %s", st, b)
	}
	if after, err := e.db.CountThreads(context.Background(), DefaultTenant, db.ThreadQuery{}); err != nil || after != before {
		t.Errorf("threads %d before refused stateless runs, %d after (%v)", before, after, err)
	}
	var hdr http.Header
	st, hdr, b = e.do("POST", "/runs/wait", map[string]any{"assistant_id": "steps-a", "input": input("go")})
	if st != http.StatusOK || !strings.Contains(string(b), `"done"`) {
		t.Fatalf("stateless wait: %d %s", st, b)
	}
	loc := hdr.Get("Content-Location")
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _, _ := e.do("GET", loc, nil)
		if st == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the temporary thread's run %s still answers %d", loc, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	evs := e.events(e.open(context.Background(), "POST", "/runs/stream", map[string]any{"assistant_id": "steps-a", "input": input("go"), "on_completion": "keep"}))
	if evs[0].Event != "metadata" || evs[len(evs)-1].Event != "end" {
		t.Errorf("stateless stream: %v", names(evs))
	}
	md := decode[map[string]string](t, evs[0].Data)
	e.waitStatus(md["thread_id"], md["run_id"], "success")
	if st, _, b := e.do("GET", "/runs/"+md["run_id"]+"/stream", nil, "Last-Event-ID", "-1"); st != http.StatusOK || !strings.Contains(string(b), "event: end") {
		t.Errorf("stateless rejoin: %d %s", st, b)
	}
	st, _, b = e.do("POST", "/runs/batch", []map[string]any{{"assistant_id": "steps-a", "input": input("a")}, {"assistantId": "steps-a", "input": input("b")}})
	if list := decode[[]map[string]any](t, b); st != http.StatusOK || len(list) != 2 || list[0]["thread_id"] == list[1]["thread_id"] {
		t.Errorf("batch: %d %s", st, b)
	}
}

// Bad requests get 4xx problems naming what is wrong.
func TestRunRequestProblems(t *testing.T) {
	e := newRunEnv(t)
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		want               string
	}{
		{"not JSON", "POST", "/threads/t1/runs", "{", 400, ""},
		{"no assistant", "POST", "/threads/t1/runs", map[string]any{"if_not_exists": "create"}, 422, "/assistant_id"},
		{"unknown assistant", "POST", "/threads/t1/runs", map[string]any{"assistant_id": "nope", "if_not_exists": "create"}, 404, "nope"},
		{"missing thread", "POST", "/threads/none/runs", map[string]any{"assistant_id": "steps-a"}, 404, "none"},
		{"bad strategy", "POST", "/threads/t1/runs", map[string]any{"assistant_id": "steps-a", "multitask_strategy": "later"}, 422, "/multitask_strategy"},
		{"unknown state key", "POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "steps-a", "if_not_exists": "create", "input": map[string]any{"nope": 1}}, 422, "/input"},
		{"unknown node", "POST", "/threads/t1/runs", map[string]any{"assistant_id": "steps-a", "if_not_exists": "create", "interrupt_before": []string{"nope"}}, 422, "nope"},
		{"stateless bad input", "POST", "/runs/stream", map[string]any{"assistant_id": "steps-a", "input": map[string]any{"log": 3}}, 422, "/input"},
		{"unknown run", "GET", "/threads/t1/runs/nope", nil, 404, ""},
		{"bad cancel action", "POST", "/threads/t1/runs/x/cancel?action=stop", nil, 422, "action"},
		{"empty bulk cancel", "POST", "/runs/cancel", map[string]any{}, 422, ""},
		{"bad list limit", "GET", "/threads/t1/runs?limit=0", nil, 422, "limit"},
	} {
		st, hdr, b := e.do(c.method, c.path, c.body)
		if st != c.status || !strings.Contains(hdr.Get("Content-Type"), "problem+json") || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s %s, want %d problem naming %q", c.name, st, hdr.Get("Content-Type"), b, c.status, c.want)
		}
	}
}

// The thread stream sends the events of each run on the thread as it
// runs, one run after another.
func TestJoinThreadStream(t *testing.T) {
	e := newRunEnv(t)
	first := e.create("t1", map[string]any{"input": input("go")})
	e.waitStatus("t1", first, "success")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := e.open(ctx, "GET", "/threads/t1/stream", nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("thread stream: %d", resp.StatusCode)
	}
	a := e.create("t1", map[string]any{"input": input("a"), "multitask_strategy": "enqueue"})
	b := e.create("t1", map[string]any{"input": input("b"), "multitask_strategy": "enqueue"})
	r := sse.NewReader(resp.Body)
	var seen []string
	for len(seen) < 2 {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("after runs %v: %v", seen, err)
		}
		if ev.Event == "metadata" {
			seen = append(seen, decode[map[string]string](t, ev.Data)["run_id"])
		}
	}
	if seen[0] != a || seen[1] != b {
		t.Errorf("thread stream showed runs %v, want %s then %s (not the finished %s)", seen, a, b, first)
	}
	if st, _, body := e.do("GET", "/threads/none/stream", nil); st != http.StatusNotFound {
		t.Errorf("stream of a missing thread: %d %s", st, body)
	}
}

// Listing filters by status and selects fields; a live run cannot be
// deleted; join with cancel_on_disconnect cancels when the client leaves.
func TestListSelectDeleteAndJoinDisconnect(t *testing.T) {
	e := newRunEnv(t)
	done := e.create("t1", map[string]any{"input": input("go")})
	e.waitStatus("t1", done, "success")
	live := e.create("t1", map[string]any{"input": input("slow")})
	<-e.slow
	st, _, b := e.do("GET", "/threads/t1/runs?status=success&select=run_id&select=status", nil)
	list := decode[[]map[string]any](t, b)
	if st != http.StatusOK || len(list) != 1 || list[0]["run_id"] != done || len(list[0]) != 2 {
		t.Errorf("list status=success select=run_id,status: %d %s", st, b)
	}
	if st, _, b := e.do("DELETE", "/threads/t1/runs/"+live, nil); st != http.StatusConflict {
		t.Errorf("delete of a running run: %d %s, want 409", st, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/threads/t1/runs/"+live+"/join?cancel_on_disconnect=1", nil)
		resp, err := e.srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-errc
	e.waitStatus("t1", live, "interrupted")
}
