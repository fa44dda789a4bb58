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
	"github.com/trellis-agents/trellis/server/runs"
)

// An assistant's middleware, named in its config, wraps the agent: here
// PII redaction of the user's input, kept redacted in the thread.
func TestConstructorMiddleware(t *testing.T) {
	m := llmtest.New()
	m.When(nil, llmtest.Text("noted")).Repeat()
	models := func(string) (llm.Model, error) { return m, nil }
	g, err := New(nil, models, nil)(context.Background(), runs.Assistant{ID: "a",
		Config: json.RawMessage(`{"configurable":{"middleware":[{"name":"pii","on":["input"],"patterns":{"ticket":"TCK-[0-9]+"}},{"name":"tool_limit","run_limit":2}]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")}
	res, err := g.Invoke(context.Background(), react.Input("I am ann@x.org about TCK-12"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	want := "I am [REDACTED:email] about [REDACTED:ticket]"
	last := m.LastRequest()
	if got := react.Messages.Get(res.State)[0].Text(); got != want || last.LastUser() != want {
		t.Errorf("thread holds %q, model saw %q; want %q", got, last.LastUser(), want)
	}
}

func TestConstructorMiddlewareErrors(t *testing.T) {
	models := func(spec string) (llm.Model, error) {
		if spec == "bad:x" {
			return nil, errors.New("unknown provider bad")
		}
		return llmtest.New(), nil
	}
	for conf, want := range map[string]string{
		`[{"name":"shout"}]`:                                       `middleware[0].name: "shout" is not one of`,
		`[{"name":"pii","strategy":"erase"}]`:                      `middleware[0].strategy: "erase"`,
		`[{"name":"tool_limit"}]`:                                  "middleware[0].run_limit",
		`[{"name":"pii","run_limit":3}]`:                           "middleware[0].run_limit: pii does not take run_limit",
		`[{"name":"tool_selector","max_tools":2,"model":"bad:x"}]`: "middleware[0].model: unknown provider bad",
		`[{"name":"pii"},{"name":"pii"}]`:                          `two middleware are named "pii"`,
	} {
		_, err := New(nil, models, nil)(context.Background(), runs.Assistant{ID: "a",
			Config: json.RawMessage(`{"configurable":{"middleware":` + conf + `}}`)})
		var in *runs.InputError
		if !errors.As(err, &in) || !strings.Contains(in.Detail, want) {
			t.Errorf("%s: err = %v; want an input error containing %q", conf, err, want)
		}
	}
}
