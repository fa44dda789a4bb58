package agentgraph

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/runs"
)

// An assistant's history policy decides what the model is sent; the
// thread keeps everything.
func TestConstructorHistory(t *testing.T) {
	m := llmtest.New()
	m.When(nil, llmtest.Text("ok")).Repeat()
	models := func(string) (llm.Model, error) { return m, nil }
	g, err := New(nil, models, nil)(context.Background(), runs.Assistant{ID: "a",
		Config: json.RawMessage(`{"configurable":{"history":{"policy":"last_turns","turns":1}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")}
	var res *graph.Result
	for _, q := range []string{"first", "second", "third"} {
		if res, err = g.Invoke(context.Background(), react.Input(q), opts...); err != nil {
			t.Fatal(err)
		}
	}
	sent := m.LastRequest().Messages
	if len(sent) != 1 || sent[0].Text() != "third" {
		t.Errorf("the last request carried %d messages (%v); want only the latest turn", len(sent), sent)
	}
	if n := len(react.Messages.Get(res.State)); n != 6 {
		t.Errorf("the thread holds %d messages; want 6", n)
	}
}

func TestConstructorHistoryErrors(t *testing.T) {
	models := func(spec string) (llm.Model, error) {
		if spec == "bad:x" {
			return nil, errors.New("unknown provider bad")
		}
		return llmtest.New(), nil
	}
	for conf, want := range map[string]string{
		`{"policy":"last_turns"}`:                   "config.configurable.history.turns: last_turns needs turns",
		`{"policy":"summarize","model":"bad:x"}`:    "config.configurable.history.model: unknown provider bad",
		`{"policy":"token_budget","max_tokens":-1}`: "history.max_tokens",
	} {
		_, err := New(nil, models, nil)(context.Background(), runs.Assistant{ID: "a",
			Config: json.RawMessage(`{"configurable":{"history":` + conf + `}}`)})
		var in *runs.InputError
		if !errors.As(err, &in) || !strings.Contains(in.Detail, want) {
			t.Errorf("%s: err = %v; want an input error containing %q", conf, err, want)
		}
	}
}

// remember and recall are built-in tools; remember runs without asking
// unless the reference says ask.
func TestMemoryTools(t *testing.T) {
	tools, policy, err := toolbox().Tools([]config.ToolRef{{Use: "remember"}, {Use: "recall"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools); len(got) != 2 || got[0] != "remember" || got[1] != "recall" {
		t.Fatalf("tools %v", got)
	}
	for _, tl := range tools {
		if policy.NeedsApproval(tl.Info(), json.RawMessage(`{}`)) {
			t.Errorf("%s needs approval by default", tl.Info().Name)
		}
	}
	_, policy, _ = toolbox().Tools([]config.ToolRef{{Use: "remember", Approve: config.ApproveAsk}})
	if !policy.NeedsApproval(tools[0].Info(), json.RawMessage(`{}`)) {
		t.Error("remember with approve: ask does not ask")
	}
}
