package sqlrouter

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// apps.sqlrouter's settings give each sub-agent its model and options
// (in its AgentSpec or by name in agent_settings), the routing call its
// own, and the routing call a history policy that keeps its request
// bounded on a 500-turn thread.
func TestAgentAndRouterSettingsFromFile(t *testing.T) {
	base := llmtest.New(llmtest.WithName("test:base"))
	cheap := llmtest.New(llmtest.WithName("test:cheap"))
	cheap.When(nil, llmtest.Text("listed")).Repeat()
	routing := llmtest.New(llmtest.WithName("test:routing"))
	routing.When(nil, llmtest.Text("Ask me about loans.")).Repeat()
	models := map[string]llm.Model{"cheap": cheap, "routing": routing}
	resolve := func(name string) (llm.Model, error) {
		if m, ok := models[name]; ok {
			return m, nil
		}
		return nil, fmt.Errorf("no model %q", name)
	}
	settings := json.RawMessage(`{
		"agents": [{"name": "lister", "description": "Lists.", "prompt": "List.", "tools": ["list_tables"], "terminal": true,
			"settings": {"model": "cheap", "temperature": 0.2, "max_tokens": 300}}],
		"agent_settings": {"lister": {"max_tokens": 50, "reasoning_effort": "high"}},
		"router_settings": {"model": "routing", "temperature": 0, "top_p": 0.3},
		"history": {"policy": "last_turns", "turns": 2}}`)
	app, err := Entry().Open(t.Context(), apps.Env{Model: base, DataDir: t.TempDir(), Resolve: resolve, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")}
	if _, err := app.Graph.Invoke(t.Context(), app.Input("@lister tables"), opts...); err != nil {
		t.Fatal(err)
	}
	r := cheap.LastRequest().Request
	if r.Temperature == nil || *r.Temperature != 0.2 || r.MaxTokens != 50 || r.Reasoning == nil || r.Reasoning.Effort != "high" {
		t.Errorf("the sub-agent's request: temperature %v, max tokens %d, reasoning %+v", r.Temperature, r.MaxTokens, r.Reasoning)
	}
	var long []llm.Message
	for i := range 500 {
		long = append(long, llm.User(fmt.Sprintf("old question %d", i)), llm.Assistant(fmt.Sprintf("old answer %d", i)))
	}
	res, err := app.Graph.Invoke(t.Context(), append(graph.Writes(react.Messages.Set(long)), app.Input("What can you do?")...), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := react.Answer(res.State); a != "Ask me about loans." {
		t.Errorf("answer %q", a)
	}
	if len(base.Requests()) != 0 {
		t.Errorf("the app's default model got %d requests; every phase has its own", len(base.Requests()))
	}
	q := routing.LastRequest()
	if q.Temperature == nil || *q.Temperature != 0 || q.TopP == nil || *q.TopP != 0.3 {
		t.Errorf("routing request options: %+v", q.Request)
	}
	// The system prompt, the turn before and the question.
	if len(q.Messages) > 4 || q.LastUser() != "What can you do?" {
		t.Errorf("the routing request carries %d messages (last user %q); want at most 4", len(q.Messages), q.LastUser())
	}
	for _, b := range []struct{ settings, want string }{
		{`{"router_settings": {"model": "nope"}}`, `router_settings.model: no model "nope"`},
		{`{"agent_settings": {"nobody": {"temperature": 1}}}`, `names "nobody", which is no sub-agent`},
		{`{"agent_settings": {"discovery": {"top_p": 7}}}`, "agent_settings.discovery.TopP"},
		{`{"history": {"policy": "token_budget"}}`, "history"},
	} {
		if _, err := Entry().Open(t.Context(), apps.Env{Model: base, DataDir: t.TempDir(), Resolve: resolve, Settings: json.RawMessage(b.settings)}); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v; want %q", b.settings, err, b.want)
		}
	}
}
