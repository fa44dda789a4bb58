package builder

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	agentbuilder "github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// apps.builder's judge and history settings reach the agent: the judge's
// requests go to the model the settings name, with its options, and on a
// long thread every request of the nodes and the judge stays bounded.
func TestJudgeAndHistoryFromSettings(t *testing.T) {
	judge := llmtest.New(llmtest.WithName("test:cheap"))
	judge.When(llmtest.LastUserContains("No changes needed"), llmtest.JSON(map[string]any{"holds": false})).Repeat()
	judge.When(nil, llmtest.JSON(map[string]any{"holds": true})).Repeat()
	resolve := func(name string) (llm.Model, error) {
		if name == "cheap" {
			return judge, nil
		}
		return nil, fmt.Errorf("no model %q", name)
	}
	m := Script().(*llmtest.Model)
	settings := `{"judge": {"model": "cheap", "temperature": 0, "top_p": 0.9, "max_tokens": 100, "reasoning_effort": "off"},
		"history": {"policy": "last_turns", "turns": 2}}`
	app, err := Entry().Open(t.Context(), apps.Env{Model: m, Resolve: resolve, Settings: json.RawMessage(settings)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	var long []llm.Message
	for i := range 500 {
		long = append(long, llm.User(fmt.Sprintf("old question %d", i)), llm.Assistant(fmt.Sprintf("old answer %d", i)))
	}
	input := append(graph.Writes(react.Messages.Set(long)), app.Input("")...)
	res, err := app.Graph.Invoke(t.Context(), input)
	if err != nil {
		t.Fatal(err)
	}
	if js := agentbuilder.Judgements.Get(res.State); len(js) != 2 || !js[0].Holds || js[1].Holds {
		t.Errorf("judgements %+v; want changes asked, then not", js)
	}
	if len(judge.Requests()) != 2 {
		t.Fatalf("the named judge model got %d requests; want 2", len(judge.Requests()))
	}
	for _, r := range judge.Requests() {
		q := r.Request
		if q.Temperature == nil || *q.Temperature != 0 || q.TopP == nil || *q.TopP != 0.9 || q.MaxTokens != 100 || q.Reasoning == nil || q.Reasoning.Enabled {
			t.Errorf("judge request options: %+v", q)
		}
		if strings.Contains(r.LastUser(), "old question 498") {
			t.Errorf("the judge saw turns the policy drops:\n%s", r.LastUser())
		}
	}
	for _, r := range m.Requests() {
		if strings.HasPrefix(r.Namespace, "answer:") || strings.HasPrefix(r.Namespace, "review:") {
			for _, msg := range r.Messages { // two turns: the question's and the one before
				if strings.Contains(msg.Text(), "old ") && !strings.HasSuffix(msg.Text(), " 499") {
					t.Fatalf("a node request carries an old turn: %q", msg.Text())
				}
			}
			continue
		}
		t.Errorf("the agent's model judged: %q", r.LastUser())
	}
	bad := []struct{ settings, want string }{
		{`{"judge": {"model": "nope"}}`, `apps.builder.judge.model: no model "nope"`},
		{`{"judge": {"temperature": 5}}`, "apps.builder.judge.Temperature"},
		{`{"history": {"policy": "all_of_it"}}`, `apps.builder.history.policy: "all_of_it"`},
	}
	for _, b := range bad {
		if _, err := Entry().Open(t.Context(), apps.Env{Model: m, Resolve: resolve, Settings: json.RawMessage(b.settings)}); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v; want %q", b.settings, err, b.want)
		}
	}
}
