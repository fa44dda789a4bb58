package react_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

var pickColor = llm.ToolSpec{Name: "pick_color", Description: "Ask the user's browser for a colour.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"hint":{"type":"string"}}}`)}

// A client tool is offered to the model beside the agent's own; its call
// stops the run with a client-call interrupt while the agent's own call in
// the same reply runs; the client's result lands as the call's tool message
// and the model answers with it.
func TestClientToolCallStopsAndResumes(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(
			llmtest.Call("weather", `{"city":"Oslo"}`),
			llmtest.Call("pick_color", `{"hint":"warm"}`),
		),
		llmtest.Text("Orange it is."),
	)
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})
	opts := threadOpts("t1")
	ctx := tool.WithClientTools(context.Background(), []llm.ToolSpec{pickColor})

	res, err := g.Invoke(ctx, react.Input("Pick a colour for Oslo."), opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("err = %v, interrupts %+v; want one interrupt", err, res.Interrupts)
	}
	var call tool.ClientCall
	if err := json.Unmarshal(res.Interrupts[0].Payload, &call); err != nil {
		t.Fatal(err)
	}
	if call.Kind != tool.ClientCallKind || call.Tool != "pick_color" || call.CallID != "call_2" || call.Arguments != `{"hint":"warm"}` {
		t.Fatalf("interrupt payload = %+v", call)
	}
	var offered []string
	for _, s := range m.Requests()[0].Tools {
		offered = append(offered, s.Name)
	}
	if !slices.Equal(offered, []string{"weather", "pick_color"}) {
		t.Errorf("tools offered = %v; want the agent's then the client's", offered)
	}
	if r.get("weather:Oslo") != 1 {
		t.Errorf("the agent's own call ran %d times before the client answered; want 1", r.get("weather:Oslo"))
	}

	answer := map[string]any{res.Interrupts[0].ID: tool.ClientResult{Content: "orange"}}
	res, err = g.Invoke(ctx, nil, append(opts, graph.WithResumeMap(answer))...)
	if err != nil {
		t.Fatal(err)
	}
	got := roles(react.Messages.Get(res.State))
	want := []string{"user:Pick a colour for Oslo.", "assistant>weather,pick_color", "tool(call_1):sunny in Oslo", "tool(call_2):orange", "assistant:Orange it is."}
	if !slices.Equal(got, want) {
		t.Errorf("history = %q\nwant %q", got, want)
	}
	if rec, ok := tool.LookupCall(res.State, react.Calls, "call_2"); !ok || rec.Result != "orange" || rec.Tool != "pick_color" {
		t.Errorf("record of the client call = %+v, %v", rec, ok)
	}
	if r.get("weather:Oslo") != 1 {
		t.Errorf("the agent's own call ran again on resume (%d runs)", r.get("weather:Oslo"))
	}
}

// A client's error result reaches the model as a tool error.
func TestClientToolError(t *testing.T) {
	m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call("pick_color", `{}`)), llmtest.Text("Sorry."))
	g := mustNew(t, react.Config{Model: m})
	opts := threadOpts("t1")
	ctx := tool.WithClientTools(context.Background(), []llm.ToolSpec{pickColor})
	res, err := g.Invoke(ctx, react.Input("colour?"), opts...)
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	res, err = g.Invoke(ctx, nil, append(opts, graph.WithResumeMap(map[string]any{res.Interrupts[0].ID: tool.ClientResult{Error: "the user closed the picker"}}))...)
	if err != nil {
		t.Fatal(err)
	}
	msgs := react.Messages.Get(res.State)
	tm := msgs[2]
	if tm.Role != llm.RoleTool || !tm.IsError || !strings.Contains(tm.Text(), "the user closed the picker") {
		t.Errorf("tool message = %+v; want a tool error naming the problem", tm)
	}
}

// A client tool named like one of the agent's own fails the run with an
// error naming it; without client tools a call of that name is an unknown
// tool for the model.
func TestClientToolNameClash(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("hi"))
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})
	ctx := tool.WithClientTools(context.Background(), []llm.ToolSpec{{Name: "weather"}})
	_, err := g.Invoke(ctx, react.Input("hi"))
	if err == nil || !strings.Contains(err.Error(), `client tool "weather"`) {
		t.Fatalf("err = %v; want the clash named", err)
	}

	m = llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call("pick_color", `{}`)), llmtest.Text("ok"))
	g = mustNew(t, react.Config{Model: m})
	res, err := g.Invoke(context.Background(), react.Input("colour?"), threadOpts("t2")...)
	if err != nil {
		t.Fatal(err)
	}
	if tm := react.Messages.Get(res.State)[2]; !tm.IsError || !strings.Contains(tm.Text(), `no tool named "pick_color"`) {
		t.Errorf("tool message = %+v; want an unknown-tool error", tm)
	}
}

func TestCheckClientTools(t *testing.T) {
	for _, tc := range []struct {
		specs []llm.ToolSpec
		want  string
	}{
		{[]llm.ToolSpec{{Name: "a b"}}, `tools[0]: tool name "a b"`},
		{[]llm.ToolSpec{{Name: "a"}, {Name: "a"}}, `tools[1]: the name "a" is given twice`},
		{[]llm.ToolSpec{{Name: "a", Parameters: json.RawMessage(`[1]`)}}, `tools[0] (a): parameters must be a JSON Schema object`},
		{make([]llm.ToolSpec, tool.MaxClientTools+1), "at most 128"},
	} {
		err := tool.CheckClientTools(tc.specs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckClientTools(%v) = %v; want %q", tc.specs[0].Name, err, tc.want)
		}
	}
	if err := tool.CheckClientTools([]llm.ToolSpec{pickColor}); err != nil {
		t.Errorf("a good tool: %v", err)
	}
}
