package server

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// The remote hop's crash test with the real planner app as the remote: a
// local server (a child process) whose router hands the offsite request
// to the remote server's planner over the LangGraph API; the person
// answers every question of the planner (the city, the group's details,
// the plan twice, the booking) on the local API. The local process is
// killed with SIGKILL while the remote planner works on the task (before
// its first question) and again while it works on the plan's approval
// (running the plan's steps); each time a new process on the same
// database takes the run over and rejoins the same remote run. The local
// thread completes with the planner's delivered answer, every local
// interrupt carried the planner's question, and the remote ran each run,
// each tool call and the one booking once.

// modelGate wraps a model so that, once armed, the next request waits for
// the test to release it (or for its context to end), so that a kill
// lands while the remote works.
type modelGate struct {
	llm.Model
	mu      sync.Mutex
	armed   bool
	reached chan struct{} // closed when an armed request arrives
	release chan struct{} // closed by the test to let it go on
}

// arm makes the next request wait; it returns the channels of this round.
func (g *modelGate) arm() (reached, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.reached, g.release = true, make(chan struct{}), make(chan struct{})
	return g.reached, g.release
}

func (g *modelGate) wait(ctx context.Context) error {
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return nil
	}
	g.armed = false
	reached, release := g.reached, g.release
	g.mu.Unlock()
	close(reached)
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *modelGate) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.Model.Generate(ctx, req)
}

func (g *modelGate) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		if err := g.wait(ctx); err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for c, err := range g.Model.Stream(ctx, req) {
			if !yield(c, err) {
				return
			}
		}
	}
}

// hopSide drives the local side of the hop over its API as a person's
// client would.
type hopSide struct {
	t      *testing.T
	client *http.Client
	url    string
	thread string
}

func (h *hopSide) post(path string, body any) (int, string) {
	h.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := h.client.Post(h.url+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// run starts a run on the thread and returns its ID.
func (h *hopSide) run(body map[string]any) string {
	h.t.Helper()
	body["assistant_id"] = hopAssistant
	body["stream_mode"] = []string{"values", "custom"}
	body["durability"] = "sync"
	code, out := h.post("/threads/"+h.thread+"/runs", body)
	var r struct {
		RunID string `json:"run_id"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &r) != nil || r.RunID == "" {
		h.t.Fatalf("start a run: %d %s", code, out)
	}
	return r.RunID
}

// ended waits for the run to end and returns its status.
func (h *hopSide) ended(run string) string {
	h.t.Helper()
	var status string
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		resp, err := h.client.Get(h.url + "/threads/" + h.thread + "/runs/" + run)
		if err != nil {
			h.t.Fatal(err)
		}
		var r struct {
			Status string `json:"status"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if status = r.Status; status != "pending" && status != "running" {
			break
		}
	}
	return status
}

// hopState is the part of a thread's state the test reads.
type hopState struct {
	Values struct {
		Messages []struct {
			Type    string `json:"type"`
			Content any    `json:"content"`
		} `json:"messages"`
	} `json:"values"`
	Interrupts []struct {
		Value json.RawMessage `json:"value"`
	} `json:"interrupts"`
}

func (h *hopSide) state(url, thread string) (hopState, string) {
	h.t.Helper()
	resp, err := h.client.Get(url + "/threads/" + thread + "/state")
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var st hopState
	if err := json.Unmarshal(b, &st); err != nil {
		h.t.Fatalf("the state of %s: %v: %s", thread, err, b)
	}
	return st, string(b)
}

func hopKill(t *testing.T, c *exec.Cmd) {
	t.Helper()
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
}

func TestRemotePlannerHopSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	// The remote: the planner app over its scripted model behind a gate,
	// with one agency the test reads (tool calls, bookings).
	agency := planner.NewAgency()
	gate := &modelGate{Model: planner.Script()}
	entry := planner.Entry()
	entry.Script = func() llm.Model { return gate }
	entry.Open = func(ctx context.Context, env apps.Env) (*apps.App, error) {
		return planner.New(ctx, planner.Config{Model: env.Model, Agency: agency})
	}
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.RegisterApps([]apps.Entry{entry}, Models{}); err != nil {
		t.Fatal(err)
	}
	remote := serveInBackground(t, rs)

	dir := t.TempDir()
	h := &hopSide{t: t, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second},
		thread: "4b5c6d7e-8f90-4a1b-9c2d-3e4f5a6b7c8d"}
	child := func() *exec.Cmd {
		c, url := startHopChild(t, dir, remote.url, envHopAgent+"=planner")
		h.url = url
		return c
	}
	current := child()

	// 1. The task, and a kill while the planner works on it (its first
	// model request waits at the gate). The new process takes the run over
	// and it ends on the planner's city question, on the same remote run.
	reached, release := gate.arm()
	runID := h.run(map[string]any{"if_not_exists": "create", "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "Plan our team offsite."}}}})
	created := hopEvents(t, h.client, h.url, h.thread, runID, func(evs []remotegraph.Event) bool { return len(evs) > 0 })
	if len(created) == 0 || created[0].Status != "created" {
		t.Fatalf("the local run shows no remote run: %+v", created)
	}
	remoteThread := created[0].ThreadID
	waitClosed(t, reached, "the planner's first model request")
	hopKill(t, current)
	close(release)
	current = child()

	// Every answer is given on the local API as the person would, to the
	// question the local interrupt carries; remoteRuns are the remote runs
	// the local runs show, in order (a local run re-runs the hop's node,
	// which shows the remote runs of the earlier rounds again, from their
	// saved IDs, before it creates the next).
	var remoteRuns []string
	checkRun := func(run, want string) {
		t.Helper()
		if status := h.ended(run); status != want {
			t.Fatalf("local run %s ended %q; want %q", run, status, want)
		}
		for _, e := range hopEvents(t, h.client, h.url, h.thread, run, nil) {
			if e.ThreadID != remoteThread {
				t.Errorf("remote thread %s; want %s", e.ThreadID, remoteThread)
			}
			if e.Status == "created" && !slices.Contains(remoteRuns, e.RunID) {
				remoteRuns = append(remoteRuns, e.RunID)
			}
		}
	}
	checkRun(runID, "interrupted")
	if len(remoteRuns) != 1 || remoteRuns[0] != created[0].RunID {
		t.Fatalf("the taken-over run shows remote runs %v; want only %s", remoteRuns, created[0].RunID)
	}
	// pending returns the local thread's one interrupt, which must carry
	// the remote planner's question as the remote thread has it.
	pending := func() json.RawMessage {
		t.Helper()
		local, raw := h.state(h.url, h.thread)
		far, farRaw := h.state(remote.url, remoteThread)
		if len(local.Interrupts) != 1 || len(far.Interrupts) != 1 {
			t.Fatalf("the local thread has %d interrupts and the remote %d; want 1 each:\n%s\n%s", len(local.Interrupts), len(far.Interrupts), raw, farRaw)
		}
		var l, r any
		_ = json.Unmarshal(local.Interrupts[0].Value, &l)
		_ = json.Unmarshal(far.Interrupts[0].Value, &r)
		lb, _ := json.Marshal(l)
		rb, _ := json.Marshal(r)
		if string(lb) != string(rb) {
			t.Fatalf("the local interrupt carries %s; want the planner's question %s", lb, rb)
		}
		return local.Interrupts[0].Value
	}
	answer := func(v any) string {
		t.Helper()
		return h.run(map[string]any{"command": map[string]any{"resume": v}})
	}
	asked := func(in json.RawMessage) (planexec.Ask, bool) {
		return planexec.AskFrom(graphInterrupt(in))
	}

	// 2. The city.
	if a, ok := asked(pending()); !ok || a.Question != planner.CityQuestion {
		t.Fatalf("the first question is %+v; want %q", a, planner.CityQuestion)
	}
	checkRun(answer(planexec.ChoiceAnswer(planner.Cities[0])), "interrupted")

	// 3. The group's details.
	if a, ok := asked(pending()); !ok || a.Question != planner.FormQuestion {
		t.Fatalf("the second question is %+v; want %q", a, planner.FormQuestion)
	}
	// 80 people is above the planner's maximum: the local API refuses the
	// answer with the planner's own answer schema, before anything goes
	// down the hop (the remote run count below shows no extra run), and
	// the question is still the one waiting.
	code, out := h.post("/threads/"+h.thread+"/runs", map[string]any{"assistant_id": hopAssistant, "command": map[string]any{"resume": planexec.FormAnswer(map[string]any{"people": 80, "length": planner.Lengths[1]})}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(out, "people") || !strings.Contains(out, "40") {
		t.Fatalf("80 people answered: %d %s; want 422 naming the people field's maximum", code, out)
	}
	if a, ok := asked(pending()); !ok || a.Question != planner.FormQuestion {
		t.Fatalf("after the refused answer the question is %+v; want %q", a, planner.FormQuestion)
	}
	checkRun(answer(planexec.FormAnswer(map[string]any{"people": 12, "length": planner.Lengths[1], "notes": "vegetarian food, please"})), "interrupted")

	// 4. The plan, approved; the local process is killed while the
	// planner runs its steps, and the next one rejoins the remote run,
	// which revises the plan and shows it again.
	if _, ok := planexec.ReviewFrom(graphInterrupt(pending())); !ok {
		t.Fatal("the third question is not the plan's review")
	}
	// The kill lands once the local run has saved the new remote run's ID
	// (its "created" event follows the save): a kill between the remote's
	// creating the run and the local save would lose the ID (see
	// docs/architecture.md).
	reached, release = gate.arm()
	approved := answer(planexec.ApprovePlan())
	sent := hopEvents(t, h.client, h.url, h.thread, approved, func(evs []remotegraph.Event) bool {
		last := evs[len(evs)-1]
		return last.Status == "created" && !slices.Contains(remoteRuns, last.RunID)
	})
	if len(sent) == 0 || slices.Contains(remoteRuns, sent[len(sent)-1].RunID) {
		t.Fatalf("the approval's local run shows no new remote run: %+v", sent)
	}
	waitClosed(t, reached, "the planner's model request after the plan's approval")
	hopKill(t, current)
	close(release)
	current = child()
	before := len(remoteRuns)
	checkRun(approved, "interrupted")
	if len(remoteRuns) != before+1 || remoteRuns[before] != sent[len(sent)-1].RunID {
		t.Fatalf("the approval's taken-over run shows remote runs %v; want one more, %s", remoteRuns, sent[len(sent)-1].RunID)
	}
	if in := pending(); !strings.Contains(string(in), planner.StepCheckVerde) {
		t.Fatalf("the fourth question is not the revised plan's review: %s", in)
	} else if _, ok := planexec.ReviewFrom(graphInterrupt(in)); !ok {
		t.Fatalf("the fourth question is not the revised plan's review: %s", in)
	}
	checkRun(answer(planexec.ApprovePlan()), "interrupted")

	// 5. The booking, approved; the thread completes.
	if in := pending(); !strings.Contains(string(in), "Quinta Verde") {
		t.Fatalf("the fifth question is not the booking's approval: %s", in)
	}
	checkRun(answer(tool.Approve()), "success")
	_ = current

	local, raw := h.state(h.url, h.thread)
	if len(local.Interrupts) != 0 || !strings.Contains(raw, planner.DeliveredText) || !strings.Contains(raw, "The planner is done.") {
		t.Errorf("the local thread at the end: %s", raw)
	}

	// Nothing ran twice: one remote run per local run (the task and five
	// answers), each ended once; each tool ran as often as in the
	// uninterrupted scenario, and the venue was booked once.
	_, list, _ := get(t, remote.url+"/threads/"+remoteThread+"/runs")
	var far []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(list), &far); err != nil {
		t.Fatal(err)
	}
	if len(far) != 6 || len(remoteRuns) != 6 {
		t.Errorf("the remote thread has %d runs and the local runs show %d (%v); want 6 and 6:\n%s", len(far), len(remoteRuns), remoteRuns, list)
	}
	for name, n := range map[string]int{planner.SearchVenues: 1, planner.ListActivities: 1, planner.CheckAvailability: 2, planner.EstimateBudget: 2, planner.BookVenue: 1} {
		if got := agency.Calls(name); got != n {
			t.Errorf("the planner called %s %d times; want %d", name, got, n)
		}
	}
	if b := agency.Bookings(); len(b) != 1 {
		t.Errorf("the agency has %d bookings (%v); want 1", len(b), b)
	}
}

// graphInterrupt wraps an interrupt's value for planexec's decoders.
func graphInterrupt(v json.RawMessage) graph.InterruptInfo {
	return graph.InterruptInfo{Payload: v}
}
