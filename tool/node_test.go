package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// Results land in call order even when later calls finish first.
func TestResultsInCallOrder(t *testing.T) {
	var (
		mu       sync.Mutex
		finished []string
	)
	// Call i waits for call i+1 to finish, so they finish last to first.
	done := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "c": make(chan struct{})}
	after := map[string]string{"a": "b", "b": "c"}
	step := tool.MustFunc("step", "a step", func(ctx context.Context, a echoArgs) (string, error) {
		if next, ok := after[a.Text]; ok {
			select {
			case <-done[next]:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		mu.Lock()
		finished = append(finished, a.Text)
		mu.Unlock()
		close(done[a.Text])
		return "ran " + a.Text, nil
	}, tool.ReadOnly())
	m := &fakeModel{replies: []llm.Message{
		llm.Assistant("", call("c1", "step", `{"text":"a"}`), call("c2", "step", `{"text":"b"}`), call("c3", "step", `{"text":"c"}`)),
		llm.Assistant("all done"),
	}}
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{step}})
	res, err := agentGraph(t, m, n).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"c", "b", "a"}, finished); d != "" {
		t.Fatalf("finish order (-want +got):\n%s", d)
	}
	msgs := msgsKey.Get(res.State)
	if d := cmp.Diff([]string{"c1:ran a", "c2:ran b", "c3:ran c"}, summarize(msgs)); d != "" {
		t.Errorf("tool messages (-want +got):\n%s", d)
	}
	if len(msgs) != 6 || msgs[5].Text() != "all done" {
		t.Errorf("history has %d messages, last %q; want user, assistant, 3 results, answer", len(msgs), msgs[len(msgs)-1].Text())
	}
	if got := llm.RepairHistory(msgs); len(got) != len(msgs) {
		t.Errorf("the history needed repair: %d → %d messages", len(msgs), len(got))
	}
	// The second request carried the results in call order.
	req := m.request(1)
	if d := cmp.Diff([]string{"c1:ran a", "c2:ran b", "c3:ran c"}, summarize(req.Messages)); d != "" {
		t.Errorf("second request's tool messages (-want +got):\n%s", d)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "step" {
		t.Errorf("request tools = %+v", req.Tools)
	}
	// Every call is recorded and can be looked up by ID.
	for _, id := range []string{"c1", "c2", "c3"} {
		r, ok := tool.LookupCall(res.State, recordsKey, id)
		if !ok {
			t.Fatalf("no record for %s", id)
		}
		if r.Tool != "step" || r.Error != "" || r.Approval != tool.OutcomeNotNeeded || r.Node != "tools" || r.Step != 2 || r.TaskID == "" || r.Duration <= 0 {
			t.Errorf("record %s = %+v", id, r)
		}
	}
	if _, ok := tool.LookupCall(res.State, recordsKey, "nope"); ok {
		t.Error("LookupCall found a record for an unknown ID")
	}
}

// approvalSetup: the model calls a read tool and a write tool, then
// answers.
func approvalSetup(t *testing.T, c *counter) (*fakeModel, *graph.Graph) {
	m := &fakeModel{replies: []llm.Message{
		llm.Assistant("", call("c1", "lookup", `{"text":"a"}`), call("c2", "send", `{"text":"b"}`)),
		llm.Assistant("finished"),
	}}
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{
		echoTool(t, "lookup", c, tool.ReadOnly()),
		echoTool(t, "send", c, tool.Summary(func(a echoArgs) string { return "Send " + a.Text })),
	}})
	return m, approvalGraph(t, m, n, nil)
}

func TestApprovalDecisions(t *testing.T) {
	cases := []struct {
		name     string
		decision tool.Decision
		want     string // the tool message of c2
		runs     map[string]int
		outcome  tool.Outcome
		edited   string
	}{
		{"approve", tool.Approve(), "c2:echo:b", map[string]int{"send:b": 1}, tool.OutcomeApproved, ""},
		{"edit", tool.Edit(json.RawMessage(`{"text":"z"}`)),
			`c2:Note: a person changed the arguments of this call before it ran; it ran with {"text":"z"}.` + "\n\necho:z",
			map[string]int{"send:b": 0, "send:z": 1}, tool.OutcomeEdited, `{"text":"z"}`},
		{"reject", tool.Reject("not today"), "!c2:A person rejected this call, so it was not run. Their message: not today",
			map[string]int{"send:b": 0}, tool.OutcomeRejected, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c counter
			m, g := approvalSetup(t, &c)
			opts := threadOpts(checkpoint.NewMemory(), "t")
			res, err := g.Invoke(context.Background(), userInput("go"), opts...)
			if !isInterrupted(err) || len(res.Interrupts) != 1 {
				t.Fatalf("err = %v, interrupts %+v; want one interrupt", err, res.Interrupts)
			}
			if sch := string(res.Interrupts[0].Schema); !strings.Contains(sch, `"action"`) || !strings.Contains(sch, `"arguments"`) {
				t.Errorf("the approval's answer schema %s does not describe a Decision", sch)
			}
			req, ok := tool.ApprovalFrom(res.Interrupts[0])
			want := tool.ApprovalRequest{Kind: tool.ApprovalKind, CallID: "c2", Tool: "send", Arguments: json.RawMessage(`{"text":"b"}`), Summary: "Send b"}
			// The request carries the tool's argument schema, for an edit.
			if !strings.Contains(string(req.Parameters), `"text"`) || req.ReadOnly {
				t.Errorf("the request's parameters %s, read-only %v; want the send tool's schema, a write", req.Parameters, req.ReadOnly)
			}
			want.Parameters = req.Parameters
			// The same call in LangChain's human-in-the-loop shape.
			want.ActionRequests = []tool.ActionRequest{{Name: "send", Args: json.RawMessage(`{"text":"b"}`), Description: "Send b"}}
			want.ReviewConfigs = []tool.ReviewConfig{{ActionName: "send", AllowedDecisions: []string{"approve", "edit", "reject"}, ArgsSchema: req.Parameters}}
			if !ok || !cmp.Equal(want, req) {
				t.Fatalf("approval request = %+v, %v; want %+v", req, ok, want)
			}
			if c.get("lookup:a") != 1 || c.get("send:b") != 0 {
				t.Fatalf("before the answer: lookup ran %d, send ran %d", c.get("lookup:a"), c.get("send:b"))
			}
			res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tc.decision))...)
			if err != nil {
				t.Fatal(err)
			}
			got := summarize(msgsKey.Get(res.State))
			if d := cmp.Diff([]string{"c1:echo:a", tc.want}, got); d != "" {
				t.Errorf("tool messages (-want +got):\n%s", d)
			}
			for k, v := range tc.runs {
				if c.get(k) != v {
					t.Errorf("%s ran %d times, want %d", k, c.get(k), v)
				}
			}
			if c.get("lookup:a") != 1 {
				t.Errorf("the finished read call ran %d times; it must not run again on resume", c.get("lookup:a"))
			}
			if m.calls() != 2 {
				t.Errorf("model called %d times, want 2", m.calls())
			}
			r, _ := tool.LookupCall(res.State, recordsKey, "c2")
			if r.Approval != tc.outcome || r.EditedArguments != tc.edited || r.Arguments != `{"text":"b"}` {
				t.Errorf("record = %+v", r)
			}
			if (tc.outcome == tool.OutcomeRejected) != (r.Error != "") {
				t.Errorf("record error = %q for outcome %s", r.Error, r.Approval)
			}
		})
	}
}

// An edit the tool cannot use, or an unknown action, asks again with the
// problem; the call runs only on a usable answer.
func TestApprovalAsksAgain(t *testing.T) {
	var c counter
	_, g := approvalSetup(t, &c)
	opts := threadOpts(checkpoint.NewMemory(), "t")
	res, err := g.Invoke(context.Background(), userInput("go"), opts...)
	if !isInterrupted(err) {
		t.Fatal(err)
	}
	first := res.Interrupts[0].ID
	answers := []struct {
		answer  any
		problem string
	}{
		{tool.Edit(json.RawMessage(`{"text":5}`)), `"text" must be a string, not an integer (5)`},
		{tool.Edit(json.RawMessage(`{"txt":"q"}`)), `unknown field "txt"`},
		{map[string]string{"action": "maybe"}, `action "maybe" is not one of "approve", "edit" or "reject"`},
	}
	seen := map[string]bool{first: true}
	for _, a := range answers {
		res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(a.answer))...)
		if !isInterrupted(err) || len(res.Interrupts) != 1 {
			t.Fatalf("after %v: err = %v, interrupts %+v; want to be asked again", a.answer, err, res.Interrupts)
		}
		in := res.Interrupts[0]
		if seen[in.ID] {
			t.Errorf("asked again with a used interrupt ID %s", in.ID)
		}
		seen[in.ID] = true
		req, _ := tool.ApprovalFrom(in)
		if !strings.Contains(req.Problem, a.problem) || req.CallID != "c2" || string(req.Arguments) != `{"text":"b"}` {
			t.Errorf("after %v: request = %+v; want problem containing %q", a.answer, req, a.problem)
		}
	}
	if c.get("send:b") != 0 || c.get("send:5") != 0 {
		t.Fatal("the write call ran before a usable answer")
	}
	_, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Edit(json.RawMessage(`{"text":"ok"}`))))...)
	if err != nil {
		t.Fatal(err)
	}
	if c.get("send:ok") != 1 || c.get("lookup:a") != 1 {
		t.Errorf("send:ok ran %d, lookup ran %d; want 1 and 1", c.get("send:ok"), c.get("lookup:a"))
	}
}

// Two write calls waiting at once are answered by interrupt ID.
func TestParallelApprovalsByID(t *testing.T) {
	var c counter
	m := &fakeModel{replies: []llm.Message{
		llm.Assistant("", call("w1", "send", `{"text":"one"}`), call("r1", "lookup", `{"text":"x"}`), call("w2", "send", `{"text":"two"}`)),
	}}
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{echoTool(t, "lookup", &c, tool.ReadOnly()), echoTool(t, "send", &c)}})
	g := approvalGraph(t, m, n, nil)
	opts := threadOpts(checkpoint.NewMemory(), "t")
	res, err := g.Invoke(context.Background(), userInput("go"), opts...)
	if !isInterrupted(err) || len(res.Interrupts) != 2 {
		t.Fatalf("err = %v, interrupts %+v; want two", err, res.Interrupts)
	}
	byCall := map[string]string{}
	for _, in := range res.Interrupts {
		req, ok := tool.ApprovalFrom(in)
		if !ok {
			t.Fatalf("interrupt %s is not an approval: %s", in.ID, in.Payload)
		}
		byCall[req.CallID] = in.ID
	}
	if byCall["w1"] == "" || byCall["w2"] == "" || byCall["w1"] == byCall["w2"] {
		t.Fatalf("interrupt IDs by call = %v", byCall)
	}
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Approve()))...); err == nil || !strings.Contains(err.Error(), "WithResumeMap") {
		t.Fatalf("one answer for two waiting calls: err = %v", err)
	}
	// Answer w1 only: it runs; the run stops again for w2.
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{byCall["w1"]: tool.Approve()}))...)
	if !isInterrupted(err) || len(res.Interrupts) != 1 || res.Interrupts[0].ID != byCall["w2"] {
		t.Fatalf("after answering w1: err = %v, interrupts %+v", err, res.Interrupts)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{byCall["w2"]: tool.Reject("")}))...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"w1:echo:one", "r1:echo:x", "!w2:A person rejected this call, so it was not run."}
	if d := cmp.Diff(want, summarize(msgsKey.Get(res.State))); d != "" {
		t.Errorf("tool messages (-want +got):\n%s", d)
	}
	for k, v := range map[string]int{"send:one": 1, "send:two": 0, "lookup:x": 1} {
		if c.get(k) != v {
			t.Errorf("%s ran %d times, want %d", k, c.get(k), v)
		}
	}
}

// The policy decides in the graph: auto-approved and predicate-approved
// write calls run at once; the rest wait.
func TestPolicyInGraph(t *testing.T) {
	var c counter
	m := &fakeModel{replies: []llm.Message{llm.Assistant("",
		call("a", "auto", `{"text":"1"}`),
		call("p1", "pred", `{"text":"small"}`),
		call("p2", "pred", `{"text":"large"}`),
		call("u", "uncovered", `{"text":"2"}`),
	)}}
	n := newNode(t, tool.NodeConfig{
		Tools: []tool.Tool{echoTool(t, "auto", &c), echoTool(t, "pred", &c), echoTool(t, "uncovered", &c)},
	})
	policy := tool.Policy{
		"auto": tool.AutoApprove(),
		"pred": tool.ApproveIf(func(args json.RawMessage) bool { return strings.Contains(string(args), "small") }),
	}
	res, err := approvalGraph(t, m, n, policy).Invoke(context.Background(), userInput("go"), threadOpts(checkpoint.NewMemory(), "t")...)
	if !isInterrupted(err) {
		t.Fatalf("err = %v; want interrupted", err)
	}
	var waiting []string
	for _, in := range res.Interrupts {
		req, _ := tool.ApprovalFrom(in)
		waiting = append(waiting, req.CallID)
	}
	if d := cmp.Diff([]string{"p2", "u"}, waiting); d != "" {
		t.Errorf("waiting calls (-want +got):\n%s", d)
	}
	if c.get("auto:1") != 1 || c.get("pred:small") != 1 || c.get("pred:large") != 0 || c.get("uncovered:2") != 0 {
		t.Errorf("runs = %v", c.n)
	}
}

func TestUnknownToolAndBadArguments(t *testing.T) {
	var c counter
	m := &fakeModel{replies: []llm.Message{llm.Assistant("",
		call("c1", "nope", `{}`),
		call("c2", "echo", `{"txt":"x"}`),
		call("c3", "echo", `{"text":`),
		call("c4", "echo", `["x"]`),
		call("c5", "echo", `{"text":"fine"}`),
	)}}
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{echoTool(t, "echo", &c, tool.ReadOnly()), tool.Stop()}})
	res, err := agentGraph(t, m, n).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`!c1:Error: there is no tool named "nope". The available tools are: echo, stop. Call one of them by its exact name.`,
		`!c2:Error: invalid arguments for tool "echo": missing required field "text" (a string); unknown field "txt"; the allowed fields are "text". Fix the arguments and call the tool again.`,
		`!c3:Error: invalid arguments for tool "echo": the arguments are not valid JSON (unexpected end of JSON input at byte 8); send a single JSON object. Fix the arguments and call the tool again.`,
		`!c4:Error: invalid arguments for tool "echo": the arguments must be a JSON object, not an array. Fix the arguments and call the tool again.`,
		`c5:echo:fine`,
	}
	if d := cmp.Diff(want, summarize(msgsKey.Get(res.State))); d != "" {
		t.Errorf("tool messages (-want +got):\n%s", d)
	}
	if m.calls() != 2 {
		t.Errorf("model called %d times; the run must go on after bad calls", m.calls())
	}
	if c.get("echo:x") != 0 || c.get("echo:fine") != 1 {
		t.Errorf("runs = %v", c.n)
	}
	r, _ := tool.LookupCall(res.State, recordsKey, "c1")
	if r.Error != `unknown tool "nope"` || !strings.HasPrefix(r.Result, "Error: there is no tool") {
		t.Errorf("record of the unknown call = %+v", r)
	}
}

func TestToolErrorAndPanic(t *testing.T) {
	fail := tool.MustFunc("fail", "fails", func(context.Context, struct{}) (string, error) {
		return "", errors.New("disk full")
	}, tool.ReadOnly())
	boom := tool.MustFunc("boom", "panics", func(context.Context, struct{}) (string, error) {
		panic("out of range")
	}, tool.ReadOnly())
	badArgs := tool.MustFunc("picky", "refuses", func(context.Context, struct{}) (string, error) {
		return "", tool.BadArguments("picky", "today is not allowed")
	}, tool.ReadOnly())
	m := &fakeModel{replies: []llm.Message{llm.Assistant("",
		call("call-fail", "fail", ``), call("call-boom", "boom", `null`), call("call-picky", "picky", `{}`))}}
	logger, logs := newLogger()
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{fail, boom, badArgs}, Logger: logger})
	res, err := agentGraph(t, m, n).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`!call-fail:Error: tool "fail" failed: disk full`,
		`!call-boom:Error: tool "boom" failed unexpectedly (it panicked: out of range). Do not assume it took effect.`,
		`!call-picky:Error: invalid arguments for tool "picky": today is not allowed. Fix the arguments and call the tool again.`,
	}
	if d := cmp.Diff(want, summarize(msgsKey.Get(res.State))); d != "" {
		t.Errorf("tool messages (-want +got):\n%s", d)
	}
	out := logs.String()
	for _, s := range []string{"call_id=call-fail", "call_id=call-boom", "tool call panicked", "disk full", "stack="} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "call-picky") {
		t.Errorf("an argument error was logged as a failure:\n%s", out)
	}
	if r, _ := tool.LookupCall(res.State, recordsKey, "call-boom"); !strings.Contains(r.Error, "panicked") {
		t.Errorf("record = %+v", r)
	}
}

// Errors while the run is cancelled, and graph interrupts, reach the
// engine untouched.
func TestErrorsThatStopTheRun(t *testing.T) {
	errOwn := errors.New("own error")
	started := make(chan struct{})
	wait := tool.MustFunc("wait", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", fmt.Errorf("gave up: %w", errors.Join(errOwn, ctx.Err()))
	}, tool.ReadOnly())
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{wait}})

	t.Run("direct", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		out, err := n.Run(ctx, graph.State{}, call("c1", "wait", `{}`))
		if out != nil || !errors.Is(err, errOwn) || !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "gave up") {
			t.Fatalf("Run = %v, %v; want the tool's own error", out, err)
		}
	})

	t.Run("graph", func(t *testing.T) {
		started = make(chan struct{})
		m := &fakeModel{replies: []llm.Message{llm.Assistant("", call("c1", "wait", `{}`))}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { <-started; cancel() }()
		res, err := agentGraph(t, m, n).Invoke(ctx, userInput("go"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v; want cancellation", err)
		}
		if res != nil && len(toolMessages(msgsKey.Get(res.State))) != 0 {
			t.Error("a cancelled call reached the history")
		}
	})

	t.Run("interrupt in a tool", func(t *testing.T) {
		ask := tool.MustFunc("ask", "asks a person", func(ctx context.Context, _ struct{}) (string, error) {
			v, err := graph.Interrupt[string](ctx, "which colour?")
			if err != nil {
				return "", err
			}
			return "colour " + v, nil
		}, tool.ReadOnly())
		m := &fakeModel{replies: []llm.Message{llm.Assistant("", call("c1", "ask", `{}`))}}
		g := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{ask}}))
		opts := threadOpts(checkpoint.NewMemory(), "t")
		res, err := g.Invoke(context.Background(), userInput("go"), opts...)
		if !isInterrupted(err) || string(res.Interrupts[0].Payload) != `"which colour?"` {
			t.Fatalf("err = %v, res %+v", err, res)
		}
		if _, ok := tool.ApprovalFrom(res.Interrupts[0]); ok {
			t.Error("ApprovalFrom accepted an interrupt that is not an approval")
		}
		res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume("blue"))...)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"c1:colour blue"}, summarize(msgsKey.Get(res.State))); d != "" {
			t.Errorf("tool messages (-want +got):\n%s", d)
		}
	})
}

func TestTruncationKeepsFullResult(t *testing.T) {
	long := "HEAD" + strings.Repeat("é", 5000) + "TAIL"
	big := tool.MustFunc("big", "a long result", func(context.Context, struct{}) (string, error) { return long, nil }, tool.ReadOnly())
	m := &fakeModel{replies: []llm.Message{llm.Assistant("", call("c1", "big", `{}`))}}
	res, err := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{big}})).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolMessages(msgsKey.Get(res.State))[0].Text(); got != long {
		t.Errorf("state holds %d bytes, want the full %d", len(got), len(long))
	}
	if r, _ := tool.LookupCall(res.State, recordsKey, "c1"); r.Result != long {
		t.Errorf("record holds %d bytes, want the full %d", len(r.Result), len(long))
	}
	sent := toolMessages(m.request(1).Messages)[0].Text()
	if !strings.HasPrefix(sent, "HEAD") || !strings.HasSuffix(sent, "TAIL") || !strings.Contains(sent, "[... 3008 of 5008 characters cut ...]") {
		t.Errorf("the model was sent %d runes: %.60q ... ", len([]rune(sent)), sent)
	}
}

func TestStateAndStoreReachTools(t *testing.T) {
	st := store.NewMemory()
	peek := tool.MustFunc("peek", "reads state", func(ctx context.Context, _ struct{}) (string, error) {
		s, ok := tool.StateFrom(ctx)
		if !ok {
			return "", errors.New("no state")
		}
		if graph.StoreFrom(ctx) != st {
			return "", errors.New("not the run's store")
		}
		return fmt.Sprintf("%d messages", len(msgsKey.Get(s))), nil
	}, tool.ReadOnly())
	m := &fakeModel{replies: []llm.Message{llm.Assistant("", call("c1", "peek", `{}`))}}
	res, err := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{peek}})).Invoke(context.Background(), userInput("go"), graph.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"c1:2 messages"}, summarize(msgsKey.Get(res.State))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, ok := tool.StateFrom(context.Background()); ok {
		t.Error("StateFrom found a state in a bare context")
	}
}

func TestMaxParallel(t *testing.T) {
	var active, peak atomic.Int32
	slow := tool.MustFunc("slow", "slow", func(context.Context, echoArgs) (string, error) {
		a := active.Add(1)
		for {
			p := peak.Load()
			if a <= p || peak.CompareAndSwap(p, a) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		active.Add(-1)
		return "ok", nil
	}, tool.ReadOnly())
	var calls []llm.ToolCall
	for i := range 6 {
		calls = append(calls, call(fmt.Sprint("c", i), "slow", fmt.Sprintf(`{"text":"%d"}`, i)))
	}
	m := &fakeModel{replies: []llm.Message{llm.Assistant("", calls...)}}
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{slow}, MaxParallel: 2})
	if _, err := agentGraph(t, m, n).Invoke(context.Background(), userInput("go")); err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 2 {
		t.Errorf("at most %d calls ran at once; want 2 (the bound)", peak.Load())
	}
}

func TestStopEndsTheLoop(t *testing.T) {
	var c counter
	m := &fakeModel{replies: []llm.Message{llm.Assistant("",
		call("c1", "echo", `{"text":"last"}`), call("c2", tool.StopName, `{"answer":"42"}`))}}
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{echoTool(t, "echo", &c, tool.ReadOnly()), tool.Stop()}})
	res, err := agentGraph(t, m, n).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if m.calls() != 1 {
		t.Errorf("model called %d times after stop; want 1", m.calls())
	}
	answer, ok := tool.Stopped(msgsKey.Get(res.State))
	if !ok || answer != "42" {
		t.Errorf("Stopped = %q, %v", answer, ok)
	}
	if _, ok := tool.LookupCall(res.State, recordsKey, "c2"); !ok || c.get("echo:last") != 1 {
		t.Errorf("stop call recorded %v, echo ran %d", ok, c.get("echo:last"))
	}
}

// A reply whose calls lack IDs or share one used to fail the run at the
// route; llm.Call now gives such calls fresh IDs, so each runs and is
// recorded apart.
func TestBadCallIDsFromTheModelDoNotStopTheRun(t *testing.T) {
	cases := map[string][]llm.ToolCall{
		"no ID":    {call("", "echo", `{"text":"a"}`)},
		"same IDs": {call("x", "echo", `{"text":"a"}`), call("x", "echo", `{"text":"b"}`)},
	}
	for name, calls := range cases {
		t.Run(name, func(t *testing.T) {
			var c counter
			m := &fakeModel{replies: []llm.Message{llm.Assistant("", calls...), llm.Assistant("done")}}
			res, err := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{echoTool(t, "echo", &c, tool.ReadOnly())}})).Invoke(context.Background(), userInput("go"))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(recordsKey.Get(res.State)); got != len(calls) {
				t.Errorf("%d calls recorded, want %d", got, len(calls))
			}
			if err := llm.CheckHistory(msgsKey.Get(res.State)); err != nil {
				t.Errorf("history: %v", err)
			}
		})
	}
}

// rawTool is a Tool with a hand-written schema and no validator of its own.
type rawTool struct{ runs atomic.Int32 }

func (r *rawTool) Info() tool.Info {
	return tool.Info{Name: "raw", ReadOnly: true, Parameters: json.RawMessage(
		`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`)}
}

func (r *rawTool) Call(context.Context, json.RawMessage) (string, error) {
	r.runs.Add(1)
	return "raw ran", nil
}

func TestNodeValidatesDeclaredSchema(t *testing.T) {
	rt := &rawTool{}
	m := &fakeModel{replies: []llm.Message{llm.Assistant("", call("c1", "raw", `{"n":0}`), call("c2", "raw", `{"n":3}`))}}
	res, err := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{rt}})).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`!c1:Error: invalid arguments for tool "raw": "n" must be at least 1, not 0. Fix the arguments and call the tool again.`, "c2:raw ran"}
	if d := cmp.Diff(want, summarize(msgsKey.Get(res.State))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if rt.runs.Load() != 1 {
		t.Errorf("raw ran %d times, want 1", rt.runs.Load())
	}
}

type badSchemaTool struct{ rawTool }

func (*badSchemaTool) Info() tool.Info {
	return tool.Info{Name: "bad", Parameters: json.RawMessage(`{"type": 5}`)}
}

func TestNewNodeErrors(t *testing.T) {
	var c counter
	_, err := tool.NewNode(tool.NodeConfig{
		Tools:       []tool.Tool{echoTool(t, "echo", &c), echoTool(t, "echo", &c), nil, &badSchemaTool{}},
		MaxParallel: -1,
	})
	if err == nil {
		t.Fatal("NewNode accepted a bad config")
	}
	for _, want := range []string{
		"NodeConfig.Messages is nil",
		"MaxParallel is -1",
		`two tools are named "echo"`,
		"tool 2: the tool is nil",
		`tool "bad": the parameters schema is not a valid JSON schema`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	err = tool.Policy{"ecko": tool.AutoApprove(), "echo": tool.AutoApprove()}.CheckTools([]tool.Tool{echoTool(t, "echo", &c), nil})
	if want := `the policy has a rule for "ecko", which is not one of the tools (echo)`; err == nil || err.Error() != want {
		t.Errorf("CheckPolicy: err = %v; want %q", err, want)
	}
}

func TestApprovalEdgeCases(t *testing.T) {
	var c counter
	send := echoTool(t, "send", &c, tool.Summary(func(echoArgs) string { panic("summary bug") }))
	logger, logs := newLogger()
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{send}, Logger: logger})
	newGraph := func() *graph.Graph {
		return approvalGraph(t, &fakeModel{replies: []llm.Message{llm.Assistant("", call("c1", "send", `{"text":"b"}`))}}, n, nil)
	}

	// Without a checkpointer the run cannot wait, and says so.
	if _, err := newGraph().Invoke(context.Background(), userInput("go")); err == nil || !strings.Contains(err.Error(), "WithCheckpointer") {
		t.Errorf("no checkpointer: err = %v", err)
	}
	// A summarizer that panics falls back to the default summary.
	res, err := newGraph().Invoke(context.Background(), userInput("go"), threadOpts(checkpoint.NewMemory(), "t")...)
	if !isInterrupted(err) {
		t.Fatal(err)
	}
	req, _ := tool.ApprovalFrom(res.Interrupts[0])
	if req.Summary != `Call send with {"text":"b"}` || !strings.Contains(logs.String(), "summary bug") {
		t.Errorf("summary = %q; log:\n%s", req.Summary, logs.String())
	}
	if c.get("send:b") != 0 {
		t.Error("the write call ran without approval")
	}
}

// checkedTool validates its own arguments, with a plain error or a panic.
type checkedTool struct{ rawTool }

func (*checkedTool) Info() tool.Info { return tool.Info{Name: "checked", ReadOnly: true} }

func (*checkedTool) ValidateArguments(args json.RawMessage) error {
	switch string(args) {
	case `{"bad":true}`:
		return errors.New("bad must be false")
	case `{"panic":true}`:
		panic("validator bug")
	}
	return nil
}

func TestNodeUsesToolValidator(t *testing.T) {
	ct := &checkedTool{}
	m := &fakeModel{replies: []llm.Message{llm.Assistant("",
		call("c1", "checked", `{"bad":true}`), call("c2", "checked", `{"panic":true}`), call("c3", "checked", `[]`), call("c4", "checked", `{}`))}}
	logger, logs := newLogger()
	res, err := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{ct}, Logger: logger})).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`!c1:Error: invalid arguments for tool "checked": bad must be false. Fix the arguments and call the tool again.`,
		`!c2:Error: tool "checked" failed unexpectedly (it panicked: validator bug). Do not assume it took effect.`,
		`!c3:Error: invalid arguments for tool "checked": the arguments must be a JSON object, not an array. Fix the arguments and call the tool again.`,
		`c4:raw ran`,
	}
	if d := cmp.Diff(want, summarize(msgsKey.Get(res.State))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if ct.runs.Load() != 1 || !strings.Contains(logs.String(), "call_id=c2") {
		t.Errorf("runs %d; log:\n%s", ct.runs.Load(), logs.String())
	}
}

// A call with an empty name or arguments that are not an object gets a
// tool error the model can act on, and the next request is one every
// provider accepts (the history is repaired on the way out).
func TestMalformedCallsGetToolErrorsAndTheNextRequestIsValid(t *testing.T) {
	var c counter
	m := &fakeModel{replies: []llm.Message{llm.Assistant("",
		call("c1", "", `{}`), call("c2", "echo", `{"text":`), call("c3", "echo", `[1]`))}}
	res, err := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{echoTool(t, "echo", &c, tool.ReadOnly())}})).Invoke(context.Background(), userInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := msgsKey.Get(res.State)
	var results []string
	for _, msg := range msgs {
		if msg.Role == llm.RoleTool {
			results = append(results, msg.Text())
		}
	}
	for i, want := range []string{"names no tool (its name is empty)", "not valid JSON", "must be a JSON object"} {
		if i >= len(results) || !strings.Contains(results[i], want) {
			t.Errorf("results = %q; want result %d to say %q", results, i, want)
		}
	}
	if m.calls() != 2 {
		t.Fatalf("model called %d times, want 2", m.calls())
	}
	if err := llm.CheckHistory(m.requests[1].Messages); err != nil {
		t.Errorf("the request after the malformed calls is not valid: %v", err)
	}
}

// The route's "go on" answer (a reply without tool calls) is made once and
// shared between calls: a caller that appends to one answer does not
// change the next.
func TestRouteGoOnIsNotChangedByAppend(t *testing.T) {
	n := newNode(t, tool.NodeConfig{})
	b := graph.New(msgsKey)
	b.AddNode("model", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(msgsKey, llm.Assistant("done"))), nil
	})
	b.SetEntry("model")
	b.AddEdge("model", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	route := n.Route("tools", "next")
	first, err := route(context.Background(), res.State)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(first, graph.To("tools"))
	second, err := route(context.Background(), res.State)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || len(second) != 1 || second[0] != graph.To("next") {
		t.Errorf("route answered %v then %v; want [To(next)] both times", first, second)
	}
}
