package router_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// A 500-turn thread under the history option of the router's Options:
// every routing request stays bounded and carries the running summary
// (written by the model the option names), the summary is kept in state,
// and the thread keeps every message.
func TestHistoryBoundsTheRoutingCall(t *testing.T) {
	m := llmtest.New(llmtest.WithName("test:router"))
	m.When(nil, llmtest.Text("ok")).Repeat()
	cheap := llmtest.New(llmtest.WithName("test:cheap"))
	cheap.When(nil, llmtest.Text("the user asked many things")).Repeat()
	o, err := router.DecodeOptions([]byte(`{"history": {"policy": "summarize", "turns": 2, "max_turns": 4, "model": "cheap"}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := router.Config{Model: m, System: "Route.", Logger: quietLog}
	if err := o.Apply(&cfg, func(string) (llm.Model, error) { return cheap, nil }); err != nil {
		t.Fatal(err)
	}
	g := mustNew(t, cfg)
	saver := checkpoint.NewMemory()
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("long")}
	const turns = 500
	var res *graph.Result
	for i := range turns {
		if res, err = g.Invoke(t.Context(), react.Input(fmt.Sprintf("turn %d", i)), opts...); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	if n := len(react.Messages.Get(res.State)); n != 2*turns {
		t.Errorf("the thread holds %d messages; want all %d", n, 2*turns)
	}
	reqs := routerRequests(m)
	if len(reqs) != turns {
		t.Fatalf("%d routing requests; want %d", len(reqs), turns)
	}
	for _, r := range reqs {
		// The system prompt, the summary and at most 4 turns of 2.
		if len(r.Messages) > 2+2*4 {
			t.Fatalf("routing request %d carries %d messages; want at most 10", r.N, len(r.Messages))
		}
	}
	last := reqs[len(reqs)-1]
	if !strings.Contains(last.System(), "the user asked many things") {
		t.Errorf("the last routing request has no summary: %q", last.System())
	}
	if s := router.HistorySummary.Get(res.State); s.Text != "the user asked many things" || s.Messages < 2*(turns-4) {
		t.Errorf("summary in state: %+v", s)
	}
	if len(cheap.Requests()) > turns/2 {
		t.Errorf("%d summary calls; the summary should be extended every few turns", len(cheap.Requests()))
	}
	if _, err := router.New(router.Config{Model: m, History: history.Budget{}}); err == nil || !strings.Contains(err.Error(), "Config.History") {
		t.Errorf("a zero budget: %v", err)
	}
	if o, _ := router.DecodeOptions([]byte(`{"history": {"policy": "forget"}}`)); o.Apply(&router.Config{Model: m}, nil) == nil {
		t.Error("an unknown history policy was accepted")
	}
}
