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

// Dynamic prompt, retry, fallback and an ending tool limit named in the
// config reach the agent: the prompt is rendered from the run's context,
// the failing model is retried once and then replaced by the operator's
// backup model, which answers. (Retry and fallback wrap the call's model,
// so retry before fallback retries the assistant's model and then falls
// back.)
func TestConstructorMiddlewareFromConfig(t *testing.T) {
	main := llmtest.New()
	main.When(nil, llmtest.Fail(&llm.APIError{Provider: "test", StatusCode: 503, Message: "main is down"})).Repeat()
	backup := llmtest.New()
	backup.When(nil, llmtest.Text("from the backup")).Repeat()
	models := func(name string) (llm.Model, error) {
		if name == "backup" {
			return backup, nil
		}
		return main, nil
	}
	g, err := New(nil, models, nil)(context.Background(), runs.Assistant{ID: "a",
		Config: json.RawMessage(`{"configurable":{"middleware":[` +
			`{"name":"dynamic_prompt","template":"You help {{context \"user\"}}."},` +
			`{"name":"retry","max_attempts":2,"initial_backoff":"1ms"},` +
			`{"name":"fallback","models":["backup"]},` +
			`{"name":"tool_limit","run_limit":1,"end_run":true}]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), react.Input("hi"), graph.WithRunContext(map[string]string{"user": "Ann"}))
	if err != nil {
		t.Fatal(err)
	}
	if ans, _ := react.Answer(res.State); ans != "from the backup" {
		t.Errorf("answer %q", ans)
	}
	if n := len(main.Requests()); n != 2 {
		t.Errorf("the main model was asked %d times; want 2 (retried once)", n)
	}
	if sys := backup.LastRequest().Messages[0]; sys.Text() != "You help Ann." {
		t.Errorf("the backup's system prompt is %q", sys.Text())
	}
}
