package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/server/sse"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// The remote hop's crash test: a local server (a child process, this test
// binary re-run) whose router assistant hands a request to a remote
// server's assistant over the LangGraph API is killed with SIGKILL while
// the remote run works; the remote run goes on to its question and waits
// for an answer; a new local process on the same database takes the run
// over, rejoins the same remote run, and the person answers on the local
// API. That process is killed too while the remote works on the answer;
// a third one rejoins the answer's remote run and the thread completes.
// The remote ran each of its runs once.

const (
	envHopChild  = "TRELLIS_SERVE_HOP_CHILD" // the remote's URL
	envHopDir    = "TRELLIS_SERVE_HOP_DIR"
	envHopAgent  = "TRELLIS_SERVE_HOP_AGENT" // the remote assistant: greeter (default) or planner
	hopAssistant = "7c0d4e1a-2b3c-4d5e-8f60-718293a4b5c6"
)

// hopChild serves the local side until it is killed, printing its URL.
func hopChild() int {
	dir, remoteURL := os.Getenv(envHopDir), os.Getenv(envHopChild)
	agent, task, desc := "greeter", "greet warmly", "Greets people."
	if os.Getenv(envHopAgent) == "planner" {
		agent, task, desc = "planner", planner.Task, "Plans and books team events."
	}
	args, _ := json.Marshal(map[string]string{"task": task})
	model := llmtest.New()
	model.When(llmtest.LastIsToolResult(), llmtest.Text("The "+agent+" is done.")).Repeat()
	model.Otherwise(llmtest.ToolCalls(llmtest.Call(agent, string(args))))
	conf := `{"configurable":{"model":"test:router","agents":["remote:` + agent + `"]}}`
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
		map[string]config.RemoteAgent{agent: {LangGraph: &config.RemoteGraph{URL: remoteURL, Assistant: agent}, AllowPrivate: true, Description: desc}})
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

func startHopChild(t *testing.T, dir, remoteURL string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envHopChild+"="+remoteURL, envHopDir+"="+dir), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
				urls <- u
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case u := <-urls:
		return cmd, u
	case <-time.After(60 * time.Second):
		t.Fatal("the serving child did not start")
	}
	return nil, ""
}

// gatedAskerSpec is nameAskerSpec whose node, on its n-th start, waits
// for gates[n-1] to close before it asks (or takes the answer); starts
// counts the node's starts.
func gatedAskerSpec(gates []chan struct{}, starts *atomic.Int32) runs.GraphSpec {
	msgs := llm.NewMessagesKey("messages")
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(msgs)
		b.AddNode("ask", func(ctx context.Context, st graph.State) (graph.Output, error) {
			if n := int(starts.Add(1)); n <= len(gates) {
				select {
				case <-gates[n-1]:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			name, err := graph.Interrupt[string](ctx, map[string]any{"kind": "ask_human", "question": "Whom should I greet?"})
			if err != nil {
				return nil, err
			}
			task := ""
			if m := msgs.Get(st); len(m) > 0 {
				task = m[len(m)-1].Text()
			}
			return graph.Writes(graph.Append(msgs, llm.Assistant("Hello, "+name+": "+task))), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}
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
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var starts atomic.Int32
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Register("greeter", gatedAskerSpec(gates, &starts)); err != nil {
		t.Fatal(err)
	}
	remote := serveInBackground(t, rs)
	open := func(i int) {
		select {
		case <-gates[i]:
		default:
			close(gates[i])
		}
	}
	defer open(0)
	defer open(1)

	dir := t.TempDir()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}
	first, url := startHopChild(t, dir, remote.url)
	const thread = "8f9e0d1c-2b3a-4c5d-9e6f-7a8b9c0d1e2f"
	postJSON := func(url, body string) (int, string) {
		t.Helper()
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := postJSON(url+"/threads/"+thread+"/runs", `{"assistant_id":"`+hopAssistant+`","if_not_exists":"create","input":{"messages":[{"role":"user","content":"Greet someone."}]},"stream_mode":["values","custom"],"durability":"sync"}`)
	var run struct {
		RunID string `json:"run_id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &run) != nil {
		t.Fatalf("create run: %d %s", code, body)
	}
	// The hop is under way once the local run has saved the remote run's
	// ID (its "created" event follows the save) and the remote node works.
	created := hopEvents(t, client, url, thread, run.RunID, func(evs []remotegraph.Event) bool { return len(evs) > 0 })
	if len(created) == 0 || created[0].Status != "created" {
		t.Fatalf("the local run shows no remote run: %+v", created)
	}
	startsReach := func(n int32) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); starts.Load() < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("the remote node did not start (%d starts)", starts.Load())
			}
		}
	}
	kill := func(c *exec.Cmd) {
		t.Helper()
		if err := c.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = c.Wait()
	}
	ended := func(url, runID string) string {
		t.Helper()
		var status string
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			resp, err := client.Get(url + "/threads/" + thread + "/runs/" + runID)
			if err != nil {
				t.Fatal(err)
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
	startsReach(1)
	kill(first)
	// The remote goes on without its caller, to its question.
	open(0)
	second, url := startHopChild(t, dir, remote.url)

	// The new process takes the run over; it ends waiting on the remote's
	// question, asked on the same remote run.
	if status := ended(url, run.RunID); status != "interrupted" {
		t.Fatalf("the taken-over run ended %q; want interrupted on the remote's question", status)
	}
	resp, err := client.Get(url + "/threads/" + thread + "/state")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(st), "Whom should I greet?") {
		t.Fatalf("the local thread after the takeover: %s; want the remote's question", st)
	}
	evs := hopEvents(t, client, url, thread, run.RunID, nil)
	for _, e := range evs {
		if e.RunID != created[0].RunID || e.ThreadID != created[0].ThreadID {
			t.Errorf("remote run %s on thread %s after the restart; want run %s on %s", e.RunID, e.ThreadID, created[0].RunID, created[0].ThreadID)
		}
	}

	// The person answers on the local API; the answer goes down to the
	// same remote thread. The local process dies while the remote works
	// on it; the next one rejoins the answer's remote run, and the local
	// thread completes.
	code, body = postJSON(url+"/threads/"+thread+"/runs", `{"assistant_id":"`+hopAssistant+`","command":{"resume":"Ada"},"stream_mode":["values","custom"],"durability":"sync"}`)
	var answer struct {
		RunID string `json:"run_id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &answer) != nil {
		t.Fatalf("answer: %d %s", code, body)
	}
	sent := hopEvents(t, client, url, thread, answer.RunID, func(evs []remotegraph.Event) bool {
		last := evs[len(evs)-1]
		return last.Status == "created" && last.RunID != created[0].RunID
	})
	if len(sent) == 0 || sent[len(sent)-1].RunID == created[0].RunID {
		t.Fatalf("the answer's local run shows no new remote run: %+v", sent)
	}
	answerRun := sent[len(sent)-1].RunID
	startsReach(2)
	kill(second)
	open(1)
	_, url = startHopChild(t, dir, remote.url)
	if status := ended(url, answer.RunID); status != "success" {
		t.Fatalf("the answer's taken-over run ended %q; want success", status)
	}
	for _, e := range hopEvents(t, client, url, thread, answer.RunID, nil) {
		if e.RunID != created[0].RunID && e.RunID != answerRun {
			t.Errorf("remote run %s after the second restart; want %s (the question) or %s (the answer)", e.RunID, created[0].RunID, answerRun)
		}
	}
	resp, err = client.Get(url + "/threads/" + thread + "/state")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(st), "Hello, Ada: greet warmly") || !strings.Contains(string(st), "The greeter is done.") || strings.Contains(string(st), `"interrupts":[{`) {
		t.Errorf("the local thread after the answer: %s", st)
	}
	// The remote thread has two runs (the task, then the answer), and its
	// node started once for each: nothing ran twice.
	_, list, _ := get(t, remote.url+"/threads/"+created[0].ThreadID+"/runs")
	var remoteRuns []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(list), &remoteRuns); err != nil {
		t.Fatal(err)
	}
	if len(remoteRuns) != 2 || starts.Load() != 2 {
		t.Errorf("the remote ran %d runs (%s) and its node started %d times; want 2 and 2", len(remoteRuns), list, starts.Load())
	}
}
