package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/sse"
	"github.com/trellis-agents/trellis/tool"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// The remote hop's crash test, with the planner app as the remote: a
// local server (a child process) whose router hands the offsite request
// to the remote server's planner over the LangGraph API; the person
// answers every question of the planner (the city, the group's details,
// the plan twice, the booking) on the local API. The local process is
// killed with SIGKILL while the remote planner works on the task (before
// its first question), again while it works on the plan's approval
// (running the plan's steps) and again after the booking (before it
// delivers); each time a new process on the same database takes the run
// over and rejoins the same remote run. The local
// thread completes with the planner's delivered answer, every local
// interrupt carried the planner's question, and the remote ran each run,
// each tool call and the one booking once.

const (
	envHopChild  = "TRELLIS_SERVE_HOP_CHILD" // the remote's URL
	envHopDir    = "TRELLIS_SERVE_HOP_DIR"
	hopAssistant = "7c0d4e1a-2b3c-4d5e-8f60-718293a4b5c6"
)

// hopChild serves the local side until it is killed, printing its URL:
// a router assistant whose scripted model hands the planner's sample
// request to the remote "planner" assistant and then says it is done.
func hopChild() int {
	dir, remoteURL := os.Getenv(envHopDir), os.Getenv(envHopChild)
	args, _ := json.Marshal(map[string]string{"task": planner.Task})
	model := llmtest.New()
	model.When(llmtest.LastIsToolResult(), llmtest.Text("The planner is done.")).Repeat()
	model.Otherwise(llmtest.ToolCalls(llmtest.Call("planner", string(args))))
	conf := `{"configurable":{"model":"test:router","agents":["remote:planner"]}}`
	s, err := New(context.Background(), Config{
		Addr: "127.0.0.1:0", Database: filepath.Join(dir, "trellis.db"), DataDir: dir,
		LeaseTTL: 3 * time.Second, SweepInterval: 200 * time.Millisecond,
		Logger:     slog.New(slog.DiscardHandler),
		Assistants: []db.Assistant{{ID: hopAssistant, GraphID: AgentGraph, Name: "desk", Config: json.RawMessage(conf)}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	err = s.RegisterAgentWithRemotes(context.Background(), Models{Resolve: func(string) (llm.Model, error) { return model, nil }}, nil,
		map[string]config.RemoteAgent{"planner": {LangGraph: &config.RemoteGraph{URL: remoteURL, Assistant: "planner"}, AllowPrivate: true, Description: "Plans and books team events."}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	go func() {
		<-s.Ready()
		fmt.Printf("URL http://%s\n", s.Addr())
	}()
	if err := s.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 4
	}
	return 0
}

func startHopChild(t *testing.T, dir, remoteURL string) (*exec.Cmd, string) {
	t.Helper()
	return startChildEnv(t, envHopChild+"="+remoteURL, envHopDir+"="+dir)
}

// hopEvents reads the remote_run events of a local run's log so far
// (without waiting for the run's end when stop says enough).
func hopEvents(t *testing.T, client *http.Client, url, thread, run string, stop func([]remotegraph.Event) bool) []remotegraph.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/threads/"+thread+"/runs/"+run+"/stream", nil)
	req.Header.Set("Last-Event-ID", "-1")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []remotegraph.Event
	rd := sse.NewReader(resp.Body)
	for {
		ev, err := rd.Next()
		if err != nil || ev.Event == "end" {
			return out
		}
		var e remotegraph.Event
		if ev.Event == "custom" && json.Unmarshal(ev.Data, &e) == nil && e.Kind == remotegraph.KindRun {
			out = append(out, e)
			if stop != nil && stop(out) {
				return out
			}
		}
	}
}

func TestRemoteHopSurvivesSIGKILL(t *testing.T) {
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
		c, url := startHopChild(t, dir, remote.url)
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

	// answerKilled answers as answer does, and kills the local process
	// while the planner works on the answer (its next model request waits
	// at the gate), once the local run has saved the new remote run's ID
	// (its "created" event follows the save; a kill between the remote's
	// creating the run and that save would lose the ID, see
	// docs/architecture.md). The next process takes the run over and
	// rejoins that remote run, and the local run ends want.
	answerKilled := func(v any, what, want string) {
		t.Helper()
		reached, release := gate.arm()
		run := answer(v)
		sent := hopEvents(t, h.client, h.url, h.thread, run, func(evs []remotegraph.Event) bool {
			last := evs[len(evs)-1]
			return last.Status == "created" && !slices.Contains(remoteRuns, last.RunID)
		})
		if len(sent) == 0 || slices.Contains(remoteRuns, sent[len(sent)-1].RunID) {
			t.Fatalf("the local run of %s shows no new remote run: %+v", what, sent)
		}
		waitClosed(t, reached, "the planner's model request after "+what)
		hopKill(t, current)
		close(release)
		current = child()
		before := len(remoteRuns)
		checkRun(run, want)
		if len(remoteRuns) != before+1 || remoteRuns[before] != sent[len(sent)-1].RunID {
			t.Fatalf("the taken-over run of %s shows remote runs %v; want one more, %s", what, remoteRuns, sent[len(sent)-1].RunID)
		}
	}

	// 4. The plan, approved; the local process is killed while the
	// planner runs its steps, and the next one rejoins the remote run,
	// which revises the plan and shows it again.
	if _, ok := planexec.ReviewFrom(graphInterrupt(pending())); !ok {
		t.Fatal("the third question is not the plan's review")
	}
	answerKilled(planexec.ApprovePlan(), "the plan's approval", "interrupted")
	if in := pending(); !strings.Contains(string(in), planner.StepCheckVerde) {
		t.Fatalf("the fourth question is not the revised plan's review: %s", in)
	} else if _, ok := planexec.ReviewFrom(graphInterrupt(in)); !ok {
		t.Fatalf("the fourth question is not the revised plan's review: %s", in)
	}
	checkRun(answer(planexec.ApprovePlan()), "interrupted")

	// 5. The booking, approved; the local process is killed while the
	// planner goes on after the booking (its next model request waits),
	// and the next one rejoins the remote run, which delivers: the thread
	// completes.
	if in := pending(); !strings.Contains(string(in), "Quinta Verde") {
		t.Fatalf("the fifth question is not the booking's approval: %s", in)
	}
	answerKilled(tool.Approve(), "the booking's approval", "success")

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
	for i, r := range far {
		if want := map[bool]string{true: "success", false: "interrupted"}[i == 0]; r.Status != want { // newest first
			t.Errorf("remote run %s ended %q; want %q", r.RunID, r.Status, want)
		}
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

// TestRemoteHopRunIDWindow shows the window between the remote's creating
// a run and the local durable save of its ID: a proxy in front of the
// remote passes the task's run creation on but holds its response, the
// local process is killed, and the next one must find the run by its
// round's key (remotegraph.MetaRunKey) and join it rather than create the
// task's run again on the same remote thread: one remote run.
func TestRemoteHopRunIDWindow(t *testing.T) {
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.RegisterApps([]apps.Entry{planner.Entry()}, Models{}); err != nil {
		t.Fatal(err)
	}
	remote := serveInBackground(t, rs)
	target, _ := neturl.Parse(remote.url)
	var hold atomic.Bool
	hold.Store(true)
	held := make(chan string, 1) // the remote thread whose run was created
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/runs") && hold.CompareAndSwap(true, false) {
			held <- strings.Split(r.URL.Path, "/")[2]
			<-r.Context().Done() // the caller dies before it reads the run's ID
			return r.Context().Err()
		}
		return nil
	}
	proxy := &http.Server{Handler: rp}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = proxy.Serve(ln) }()
	t.Cleanup(func() { _ = proxy.Close() })

	dir := t.TempDir()
	h := &hopSide{t: t, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second},
		thread: "5c6d7e8f-9012-4b3c-8d4e-5f6a7b8c9d0e"}
	first, url := startHopChild(t, dir, "http://"+ln.Addr().String())
	h.url = url
	run := h.run(map[string]any{"if_not_exists": "create", "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "Plan our team offsite."}}}})
	var remoteThread string
	select {
	case remoteThread = <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the local run did not create the remote run")
	}
	hopKill(t, first)
	_, h.url = startHopChild(t, dir, "http://"+ln.Addr().String())
	if status := h.ended(run); status != "interrupted" {
		t.Fatalf("the taken-over run ended %q; want interrupted on the city question", status)
	}
	_, list, _ := get(t, remote.url+"/threads/"+remoteThread+"/runs")
	var far []struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(list), &far); err != nil {
		t.Fatal(err)
	}
	if len(far) != 1 {
		t.Errorf("the remote thread has %d runs of the one task; want 1:\n%s", len(far), list)
	}
}
