package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// A runner's assistant configuration reaches the agent: the "planner"
// options in config.configurable choose the intent phase's model by name
// (resolved by the runner) and its prompt.
func TestEntryReadsOptions(t *testing.T) {
	chatty := llmtest.New(llmtest.WithName("test:chatty"))
	chatty.Otherwise(llmtest.JSON(map[string]string{"intent": "chat", "reply": "Hello from the small model."}))
	resolve := func(name string) (llm.Model, error) {
		if name == "small" {
			return chatty, nil
		}
		return nil, fmt.Errorf("no model named %q", name)
	}
	env := apps.Env{Model: Script(), Resolve: resolve, Configurable: []byte(`{"model": "default", "planner": {
		"phases": {"intent": {"model": "small", "temperature": 0}},
		"prompts": {"intent": "Is this chat? The agent is {{.Name}}."}}}`)}
	app, err := Entry().Open(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	res, err := app.Graph.Invoke(apps.WithScope(context.Background(), "t1"), app.Input("Hi there"),
		graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := planexec.Answer(res.State); a != "Hello from the small model." {
		t.Errorf("answer = %q", a)
	}
	req := chatty.LastRequest()
	if !strings.HasPrefix(req.System(), "Is this chat? The agent is offsite-planner.") || req.Temperature == nil || *req.Temperature != 0 {
		t.Errorf("intent request: system %q, temperature %v", req.System(), req.Temperature)
	}
}

func TestEntryRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{`{"planner": {"max_question": 2}}`, "max_question"},
		{`{"planner": {"phases": {"plan": {"model": "huge"}}}}`, "phases.plan.model"},
		{`{"planner": {"prompts": {"plan": "{{.Nope}}"}}}`, "Prompts.Plan"},
	} {
		_, err := Entry().Open(context.Background(), apps.Env{Model: Script(), Configurable: []byte(tc.conf)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v; want %q", tc.conf, err, tc.want)
		}
	}
}

// The app's settings (trellis.yaml's apps.planner) are the planner's
// options when the assistant names none of its own under OptionsKey.
func TestEntryReadsAppSettings(t *testing.T) {
	chatty := llmtest.New(llmtest.WithName("test:chatty"))
	chatty.Otherwise(llmtest.JSON(map[string]string{"intent": "chat", "reply": "From the settings."}))
	resolve := func(name string) (llm.Model, error) {
		if name == "small" {
			return chatty, nil
		}
		return nil, fmt.Errorf("no model named %q", name)
	}
	env := apps.Env{Model: Script(), Resolve: resolve,
		Settings: []byte(`{"phases": {"intent": {"model": "small"}}}`)}
	app, err := Entry().Open(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	res, err := app.Graph.Invoke(apps.WithScope(context.Background(), "t1"), app.Input("Hi there"),
		graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := planexec.Answer(res.State); a != "From the settings." {
		t.Errorf("answer = %q; want the intent phase's model from the settings", a)
	}
	// A bad settings section is refused, naming the field.
	_, err = Entry().Open(context.Background(), apps.Env{Model: Script(), Settings: []byte(`{"max_question": 2}`)})
	if err == nil || !strings.Contains(err.Error(), "max_question") {
		t.Errorf("err = %v; want the unknown field named", err)
	}
}
