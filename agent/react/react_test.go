package react_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

func TestPlainAnswer(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("Hello there."))
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})
	res, err := g.Invoke(context.Background(), react.Input("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := react.Answer(res.State); !ok || got != "Hello there." {
		t.Errorf("Answer = %q, %v", got, ok)
	}
	if res.Status != graph.StatusCompleted || res.Steps != 1 {
		t.Errorf("status %s after %d steps; want completed after 1", res.Status, res.Steps)
	}
	req := m.LastRequest()
	if d := cmp.Diff([]string{"weather"}, req.ToolNames()); d != "" {
		t.Errorf("tools offered (-want +got):\n%s", d)
	}
	if req.ToolChoice.Mode != "" {
		t.Errorf("tool choice = %q; want the provider's default", req.ToolChoice.Mode)
	}
}

func TestOneToolRound(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)),
		llmtest.Text("It is sunny in Oslo."),
	)
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})
	res, err := g.Invoke(context.Background(), react.Input("Weather in Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:Weather in Oslo?", "assistant>weather", "tool(call_1):sunny in Oslo", "assistant:It is sunny in Oslo."}
	if d := cmp.Diff(want, roles(react.Messages.Get(res.State))); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if r.get("weather:Oslo") != 1 {
		t.Errorf("weather ran %d times; want 1", r.get("weather:Oslo"))
	}
	var nodes []string
	for _, p := range res.Path {
		nodes = append(nodes, p.Node)
	}
	if d := cmp.Diff([]string{react.ModelNode, react.ToolsNode, react.ModelNode}, nodes); d != "" {
		t.Errorf("path (-want +got):\n%s", d)
	}
	// The second request carried the result.
	if reqs := m.Requests(); len(reqs) != 2 || reqs[1].Messages[len(reqs[1].Messages)-1].Text() != "sunny in Oslo" {
		t.Errorf("the second request does not end with the tool result: %+v", reqs)
	}
}

func TestParallelCalls(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`), llmtest.Call("weather", `{"city":"Rome"}`)),
		llmtest.Text("Both sunny."),
	)
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})
	res, err := g.Invoke(context.Background(), react.Input("Oslo and Rome?"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:Oslo and Rome?", "assistant>weather,weather",
		"tool(call_1):sunny in Oslo", "tool(call_2):sunny in Rome", "assistant:Both sunny."}
	if d := cmp.Diff(want, roles(react.Messages.Get(res.State))); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if r.get("weather:Oslo") != 1 || r.get("weather:Rome") != 1 {
		t.Errorf("runs: %v", r.n)
	}
	// Both calls ran as tasks of one step.
	if res.Path[1].Step != res.Path[2].Step || res.Path[1].Node != react.ToolsNode || res.Path[2].Node != react.ToolsNode {
		t.Errorf("the calls did not run in one step: %+v", res.Path)
	}
	for id, city := range map[string]string{"call_1": "Oslo", "call_2": "Rome"} {
		rec, ok := tool.LookupCall(res.State, react.Calls, id)
		if !ok || rec.Tool != "weather" || rec.Result != "sunny in "+city || rec.Error != "" {
			t.Errorf("record %s = %+v, %v", id, rec, ok)
		}
	}
}

func TestSystemPromptOnlyInRequests(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)),
		llmtest.Text("Sunny."),
	)
	var r ran
	g := mustNew(t, react.Config{Model: m, System: "Be brief.", Tools: []tool.Tool{weather(&r)}})
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; want 2", len(reqs))
	}
	for _, req := range reqs {
		if req.Messages[0].Role != llm.RoleSystem || req.System() != "Be brief." {
			t.Errorf("request %d starts with %+v; want the system prompt", req.N, req.Messages[0])
		}
		if strings.Count(strings.Join(roles(req.Messages), "|"), "system:") != 1 {
			t.Errorf("request %d has the system prompt more than once", req.N)
		}
	}
	for _, msg := range react.Messages.Get(res.State) {
		if msg.Role == llm.RoleSystem {
			t.Errorf("the system prompt was stored in state: %+v", msg)
		}
	}
}

func TestLongResultsCutForTheModelOnly(t *testing.T) {
	m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call("search", `{"q":"a"}`)), llmtest.Text("done"))
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{search(&r, 500)}, ResultLimit: tool.Limit{Head: 10, Tail: 10}})
	res, err := g.Invoke(context.Background(), react.Input("go"))
	if err != nil {
		t.Fatal(err)
	}
	sent := m.LastRequest().Messages
	if got := sent[len(sent)-1].Text(); len(got) >= 100 || !strings.Contains(got, "480 of 500 characters cut") {
		t.Errorf("the model saw %q; want a cut result", got)
	}
	if got := react.Messages.Get(res.State)[2].Text(); len(got) != 500 {
		t.Errorf("state holds %d characters of the result; want all 500", len(got))
	}
}

func TestToolSubset(t *testing.T) {
	var r ran
	cfg := func(m llm.Model) react.Config {
		return react.Config{Model: m, Tools: []tool.Tool{weather(&r), search(&r, 3), tool.Stop()}}
	}
	withSubset := func(names ...string) graph.Update {
		return append(react.Input("go"), react.ToolSubset.Set(names))
	}

	t.Run("offers only the subset and the stop tool", func(t *testing.T) {
		m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call("search", `{"q":"x"}`)), llmtest.Text("ok"))
		res, err := mustNew(t, cfg(m)).Invoke(context.Background(), withSubset("search"))
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range m.Requests() {
			if d := cmp.Diff([]string{"search", "stop"}, req.ToolNames()); d != "" {
				t.Errorf("request %d tools (-want +got):\n%s", req.N, d)
			}
		}
		if r.get("search:x") != 1 {
			t.Error("the enabled tool did not run")
		}
		// The subset stays on the thread's state; nil restores all tools.
		if got := react.ToolSubset.Get(res.State); !cmp.Equal(got, []string{"search"}) {
			t.Errorf("subset in state = %v", got)
		}
	})

	t.Run("a call of a disabled tool is refused", func(t *testing.T) {
		m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)), llmtest.Text("ok"))
		res, err := mustNew(t, cfg(m)).Invoke(context.Background(), withSubset("search"))
		if err != nil {
			t.Fatal(err)
		}
		if r.get("weather:Oslo") != 0 {
			t.Error("a tool outside the subset ran")
		}
		msg := react.Messages.Get(res.State)[2]
		if !msg.IsError || !strings.Contains(msg.Text(), `"weather" is not available`) || !strings.Contains(msg.Text(), "search, stop") {
			t.Errorf("tool message = %+v", msg)
		}
		rec, ok := tool.LookupCall(res.State, react.Calls, "call_1")
		if !ok || rec.Error == "" || rec.Node != react.ToolsNode {
			t.Errorf("record = %+v, %v", rec, ok)
		}
	})

	t.Run("an unknown name fails the run", func(t *testing.T) {
		m := llmtest.New().Reply(llmtest.Text("never"))
		_, err := mustNew(t, cfg(m)).Invoke(context.Background(), withSubset("search", "fly", "swim"))
		var ne *graph.NodeError
		if !errors.As(err, &ne) || ne.Node != react.ModelNode {
			t.Fatalf("err = %v; want a NodeError from the model node", err)
		}
		for _, want := range []string{`"fly", "swim"`, "search, stop, weather"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %s", err, want)
			}
		}
		if len(m.Requests()) != 0 {
			t.Error("the model was asked anyway")
		}
	})
}

func TestStopToolEndsTheLoop(t *testing.T) {
	m := llmtest.New().Reply(llmtest.ToolCalls(
		llmtest.Call("weather", `{"city":"Oslo"}`),
		llmtest.Call("stop", `{"answer":"Oslo is sunny."}`),
	))
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r), tool.Stop()}})
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := react.Answer(res.State); !ok || got != "Oslo is sunny." {
		t.Errorf("Answer = %q, %v", got, ok)
	}
	if len(m.Requests()) != 1 || r.get("weather:Oslo") != 1 {
		t.Errorf("%d requests, weather ran %d; want 1 and 1", len(m.Requests()), r.get("weather:Oslo"))
	}
}

func TestRequestTemplate(t *testing.T) {
	temp := 0.2
	m := llmtest.New().Reply(llmtest.Text("ok"))
	g := mustNew(t, react.Config{Model: m, Request: llm.Request{Temperature: &temp, MaxTokens: 99, Stop: []string{"END"}}})
	if _, err := g.Invoke(context.Background(), react.Input("go")); err != nil {
		t.Fatal(err)
	}
	req := m.LastRequest()
	if req.Temperature == nil || *req.Temperature != 0.2 || req.MaxTokens != 99 || !cmp.Equal(req.Stop, []string{"END"}) {
		t.Errorf("request options = temp %v, max %d, stop %v", req.Temperature, req.MaxTokens, req.Stop)
	}
}

func TestConfigErrorsListEveryProblem(t *testing.T) {
	var r ran
	_, err := react.New(react.Config{
		Tools:       []tool.Tool{weather(&r), weather(&r), nil},
		Policy:      tool.Policy{"fly": tool.AutoApprove()},
		MaxParallel: -1,
		MaxSteps:    -5,
		Request:     llm.Request{Messages: []llm.Message{llm.User("x")}, Tools: []llm.ToolSpec{{Name: "x"}}, ResponseFormat: &llm.ResponseFormat{}},
		Output:      react.OutputTo[struct{ A int }](nil),
	})
	if err == nil {
		t.Fatal("New accepted a broken config")
	}
	for _, want := range []string{
		"Config.Model is nil",
		"MaxSteps is negative",
		"Request.Messages is set",
		"Request.Tools is set",
		"Request.ResponseFormat is set",
		"nil key",
		`two tools are named "weather"`,
		"the tool is nil",
		`rule for "fly"`,
		"MaxParallel is -1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}

	_, err = react.New(react.Config{Model: llmtest.New(), Tools: []tool.Tool{weather(&r)},
		Request: llm.Request{ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "fly"}}})
	if err == nil || !strings.Contains(err.Error(), `names tool "fly"`) {
		t.Errorf("a tool choice naming no tool: err = %v", err)
	}
	_, err = react.New(react.Config{Model: llmtest.New(), Output: react.OutputTo(graph.NewKey[chan int]("c"))})
	if err == nil || !strings.Contains(err.Error(), "cannot be a structured answer") {
		t.Errorf("an output type without a schema: err = %v", err)
	}
	_, err = react.New(react.Config{Model: llmtest.New(), Messages: llm.NewMessagesKey("tool_calls")})
	if err == nil || !strings.Contains(err.Error(), "does not compile") {
		t.Errorf("keys sharing a name: err = %v", err)
	}
}

func TestAnswerFrom(t *testing.T) {
	call := llm.ToolCall{ID: "c1", Name: "weather", Arguments: `{}`}
	stop := llm.ToolCall{ID: "c2", Name: tool.StopName, Arguments: `{"answer":"via stop"}`}
	cases := []struct {
		name string
		msgs []llm.Message
		want string
		ok   bool
	}{
		{"empty", nil, "", false},
		{"text", []llm.Message{llm.User("q"), llm.Assistant("a")}, "a", true},
		{"pending user turn", []llm.Message{llm.Assistant("a"), llm.User("q")}, "", false},
		{"calls pending", []llm.Message{llm.User("q"), llm.Assistant("", call)}, "", false},
		{"after a tool round", []llm.Message{llm.Assistant("", call), llm.ToolResult(call, "r")}, "", false},
		{"stop tool", []llm.Message{llm.Assistant("", stop), llm.ToolResult(stop, "Stopped.")}, "via stop", true},
	}
	for _, tc := range cases {
		if got, ok := react.AnswerFrom(tc.msgs); got != tc.want || ok != tc.ok {
			t.Errorf("%s: AnswerFrom = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// A model error fails the run with the provider's error; nothing is stored.
func TestModelErrorFailsTheRun(t *testing.T) {
	m := llmtest.New().Reply(llmtest.StatusError(503, "overloaded"))
	res, err := mustNew(t, react.Config{Model: m}).Invoke(context.Background(), react.Input("hi"))
	var api *llm.APIError
	if !errors.As(err, &api) || api.StatusCode != 503 || res.Status != graph.StatusFailed {
		t.Fatalf("err = %v, status %v; want the APIError", err, res.Status)
	}
	if n := len(react.Messages.Get(res.State)); n != 1 {
		t.Errorf("history has %d messages; want only the input", n)
	}
}
