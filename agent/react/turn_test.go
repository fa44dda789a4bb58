package react_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

func mustTurn(t *testing.T, cfg react.Config) *react.Turn {
	t.Helper()
	turn, err := react.NewTurn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if turn == nil {
		t.Fatal("NewTurn gave no turn for a toolless loop")
	}
	return turn
}

// A loop that could go past one model turn has no Turn.
func TestNewTurnOnlyForToollessLoops(t *testing.T) {
	m := llmtest.New()
	var r ran
	for name, cfg := range map[string]react.Config{
		"tools":   {Model: m, Tools: []tool.Tool{weather(&r)}},
		"history": {Model: m, History: history.Budget{Max: 1000}},
		"strict":  {Model: m, FailOnStepLimit: true},
	} {
		turn, err := react.NewTurn(cfg)
		if err != nil || turn != nil {
			t.Errorf("%s: NewTurn = %v, %v; want nil, nil", name, turn, err)
		}
	}
}

// Ask sends the request the loop's first model step sends, and returns
// the reply the loop ends with, with the usage llm.Call counted.
func TestTurnAsksAsTheLoop(t *testing.T) {
	cfg := func(m *llmtest.Model) react.Config {
		return react.Config{Model: m, System: "Be brief.", Voice: "helper", Request: llm.Request{Temperature: new(0.5)}}
	}
	loopModel := llmtest.New().Reply(llmtest.Text("Hi."))
	if _, err := mustNew(t, cfg(loopModel)).Invoke(context.Background(), react.Input("hello")); err != nil {
		t.Fatal(err)
	}
	turnModel := llmtest.New().Reply(llmtest.Text("Hi."))
	msg, usage, ok, err := mustTurn(t, cfg(turnModel)).Ask(context.Background(), []llm.Message{llm.User("hello")}, 19)
	if err != nil || !ok {
		t.Fatalf("Ask = %v, %v", ok, err)
	}
	if msg.Text() != "Hi." || msg.Name != "helper" || usage.Requests != 1 {
		t.Errorf("Ask gave %q by %q, %d requests; want \"Hi.\" by helper, 1", msg.Text(), msg.Name, usage.Requests)
	}
	loop, turn := loopModel.Requests(), turnModel.Requests()
	if len(loop) != 1 || len(turn) != 1 {
		t.Fatalf("requests: loop %d, turn %d", len(loop), len(turn))
	}
	if d := cmp.Diff(loop[0].Request, turn[0].Request, cmpopts.IgnoreFields(llm.Message{}, "ID")); d != "" {
		t.Errorf("request (-loop +turn):\n%s", d)
	}
}

// A reply that calls tools ends the turn only in the loop's last step
// (the calls dropped, as the graceful finish drops them); otherwise the
// caller must run the loop. A run with client tools asks nothing.
func TestTurnToolCalls(t *testing.T) {
	calling := func() *llmtest.Model {
		return llmtest.New().Reply(llmtest.Text("Let me look.").WithCalls(llmtest.Call("ghost", `{}`)))
	}
	hello := []llm.Message{llm.User("hello")}
	msg, _, ok, err := mustTurn(t, react.Config{Model: calling()}).Ask(context.Background(), hello, 1)
	if err != nil || !ok || len(msg.ToolCalls) > 0 || !strings.Contains(msg.Text(), "ghost") {
		t.Errorf("last step: Ask = %+v, %v, %v; want the reply without its calls, naming them", msg, ok, err)
	}
	msg, usage, ok, err := mustTurn(t, react.Config{Model: calling()}).Ask(context.Background(), hello, 3)
	if err != nil || ok || len(msg.ToolCalls) != 1 || usage.Requests != 1 {
		t.Errorf("steps left: Ask = %+v, %v, %v; want not ok, the reply with its call, 1 request", msg, ok, err)
	}
	m := calling()
	ctx := tool.WithClientTools(context.Background(), []llm.ToolSpec{{Name: "pick"}})
	if _, _, ok, err := mustTurn(t, react.Config{Model: m}).Ask(ctx, hello, 3); ok || err != nil || len(m.Requests()) != 0 {
		t.Errorf("client tools: Ask = %v, %v after %d requests; want not ok, no request", ok, err, len(m.Requests()))
	}
}
