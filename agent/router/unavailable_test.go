package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// When the router model fails, mid-turn after a tool round too, the turn
// ends with a polite answer and the failure in the outcome, the run
// completes, and the thread's next message is routed as usual.
func TestModelFailureGivesPoliteReply(t *testing.T) {
	var r ran
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("lookup", `{}`)),
		llmtest.StatusError(503, "overloaded"),
		llmtest.Text("Hello again."),
	)
	g := mustNew(t, router.Config{Model: m, Tools: []tool.Tool{fixedTool(&r, "lookup", "42")}, Logger: quietLog})
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")}
	res, err := g.Invoke(context.Background(), react.Input("Look it up."), opts...)
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("err %v, status %s; want a completed run", err, res.Status)
	}
	o := finished(t, res.State)
	if o.Reason != router.ReasonUnavailable || o.Answer != router.DefaultUnavailablePrompt || !strings.Contains(o.Error, "503") || !o.Failed() {
		t.Errorf("outcome %+v", o)
	}
	res, err = g.Invoke(context.Background(), react.Input("Hi?"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if o := finished(t, res.State); o.Reason != router.ReasonAnswer || o.Answer != "Hello again." {
		t.Errorf("the next turn: %+v", o)
	}
	want := []string{"user:Look it up.", "assistant>lookup", "tool(call_1):42", "assistant:" + router.DefaultUnavailablePrompt, "user:Hi?", "assistant:Hello again."}
	if got := roles(react.Messages.Get(res.State)); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("history:\n%v\nwant:\n%v", got, want)
	}
	last := m.LastRequest()
	if n := len(last.Messages); n != 5 {
		t.Errorf("the next turn's request holds %d messages; want the whole history (5)", n)
	}
}

// A cancelled run still fails: only the model's own failures are
// answered politely.
func TestCancelledRunStillFails(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("late"))
	g := mustNew(t, router.Config{Model: m})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Invoke(ctx, react.Input("Hi")); err == nil {
		t.Error("a cancelled run completed")
	}
}

// The routing phase's settings reach every router request (another model,
// options over the Request template's), and the router's texts are
// templates over its agents and tools.
func TestSettingsAndTemplates(t *testing.T) {
	var r ran
	base := llmtest.New(llmtest.WithName("test:base"))
	strong := llmtest.New(llmtest.WithName("test:strong")).Reply(llmtest.StatusError(500, "boom"))
	temp, topP := 0.2, 0.7
	g := mustNew(t, router.Config{
		Model: base, Name: "desk",
		Settings: llm.Settings{Model: strong, Temperature: &temp, MaxTokens: 256},
		Request:  llm.Request{TopP: &topP, MaxTokens: 10},
		System:   "ignored: Prompts.System wins",
		Prompts: router.Prompts{System: "{{.Name}} routes to{{range .Agents}} {{.Name}}{{end}}; tools:{{range .Tools}} {{.}}{{end}}.",
			Unavailable: "{{.Name}} is down ({{.Error}})."},
		Tools:  []tool.Tool{fixedTool(&r, "lookup", "42")},
		Agents: []router.Agent{{Name: "writer", Description: "Writes.", Graph: reactAgent(t, base)}},
		Logger: quietLog,
	})
	res, err := g.Invoke(context.Background(), react.Input("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Requests()) != 0 {
		t.Error("the base model was asked; Settings.Model should answer")
	}
	req := strong.LastRequest()
	if req.System() != "desk routes to writer; tools: lookup." {
		t.Errorf("system = %q", req.System())
	}
	if req.Temperature == nil || *req.Temperature != 0.2 || req.MaxTokens != 256 || req.TopP == nil || *req.TopP != 0.7 {
		t.Errorf("options: temperature %v, max tokens %d, top_p %v", req.Temperature, req.MaxTokens, req.TopP)
	}
	if o := finished(t, res.State); !strings.HasPrefix(o.Answer, "desk is down (") || !strings.Contains(o.Answer, "500") {
		t.Errorf("answer = %q", o.Answer)
	}
}

func TestTemplateAndSettingsErrors(t *testing.T) {
	bad := 3.0
	_, err := router.New(router.Config{Model: llmtest.New(), System: "{{call:x}} stays text", Prompts: router.Prompts{System: "{{.Nope}}", Budget: "{{"}, Settings: llm.Settings{Temperature: &bad}})
	for _, want := range []string{"Config.Prompts.System is not a usable template", "Config.Prompts.Budget is not a usable template", "Config.Settings.Temperature"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want %q", err, want)
		}
	}
}

// Options from a configuration file set the routing settings and texts.
func TestOptions(t *testing.T) {
	fast := llmtest.New(llmtest.WithName("test:fast")).Reply(llmtest.Fail(errors.New("down")))
	o, err := router.DecodeOptions([]byte(`{"system": "Route.", "settings": {"model": "fast", "temperature": 0},
		"prompts": {"unavailable": "Offline, sorry."}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := router.Config{Model: llmtest.New(), Logger: quietLog}
	if err := o.Apply(&cfg, func(name string) (llm.Model, error) { return fast, nil }); err != nil {
		t.Fatal(err)
	}
	res, err := mustNew(t, cfg).Invoke(context.Background(), react.Input("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	last := fast.LastRequest()
	if got := finished(t, res.State).Answer; got != "Offline, sorry." || last.System() != "Route." || *last.Temperature != 0 {
		t.Errorf("answer %q, request %+v", got, last.Request)
	}
	if _, err := router.DecodeOptions([]byte(`{"model": "x"}`)); err == nil || !strings.Contains(err.Error(), `"model"`) {
		t.Errorf("unknown field: %v", err)
	}
}

// Config.System is plain text: call references in it are sent as written.
func TestPlainSystem(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("ok"))
	if _, err := mustNew(t, router.Config{Model: m, System: "Cite outputs as {{call:ID}}."}).Invoke(context.Background(), react.Input("Hi")); err != nil {
		t.Fatal(err)
	}
	if last := m.LastRequest(); last.System() != "Cite outputs as {{call:ID}}." {
		t.Errorf("system = %q", last.System())
	}
}
