package builder

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"testing"

	agentbuilder "github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

func TestScriptedRun(t *testing.T) {
	model := Script().(*llmtest.Model)
	a, err := NewAgent(Config{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), agentbuilder.Input(Question))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Path, " "); got != "answer review answer review" {
		t.Errorf("path = %q", got)
	}
	if !res.Success || res.Iterations != 4 {
		t.Errorf("success %v after %d iterations; want true after 4", res.Success, res.Iterations)
	}
	js := res.Judgements
	if len(js) != 2 || !js[0].Holds || js[1].Holds {
		t.Errorf("judgements = %+v; want changes asked once, then not", js)
	}
	msgs := react.Messages.Get(res.FinalState)
	var replies []string
	for _, m := range msgs {
		if strings.HasPrefix(m.Text(), "Yes: faulty items") {
			replies = append(replies, m.Text())
		}
	}
	if len(replies) != 2 || !strings.Contains(replies[1], "free prepaid return label") {
		t.Errorf("drafts = %q; want the second to add the free label", replies)
	}
	// The reviewer speaks in its own voice, the drafts in the agent's.
	var voices []string
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant && m.Text() != "" {
			voices = append(voices, cmp.Or(m.Name, "agent"))
		}
	}
	if got := strings.Join(voices, " "); got != "agent reviewer agent reviewer" {
		t.Errorf("the replies' voices are %q; want the drafts unnamed and the reviews %q", got, Reviewer)
	}
	if calls := agentbuilder.ToolCalls(res.FinalState); len(calls) != 2 || calls[1].Result != policies["shipping"] {
		t.Errorf("tool calls = %+v", calls)
	}
	// The second draft was asked with the review in its history.
	var sawReview bool
	for _, r := range model.Requests() {
		if strings.HasPrefix(r.Namespace, "answer:") {
			for _, m := range r.Messages {
				sawReview = sawReview || strings.Contains(m.Text(), "return shipping is free")
			}
		}
	}
	if !sawReview {
		t.Error("no request of the answer node carried the review")
	}
	if out := outcome(res.FinalState); !strings.Contains(out, "holds = true") || !strings.Contains(out, "No changes needed") {
		t.Errorf("outcome:\n%s", out)
	}
}

// TestScriptServesManyThreads: one scripted model answers any number of
// threads the same way (its replies follow the request, not a queue).
func TestScriptServesManyThreads(t *testing.T) {
	app, err := New(context.Background(), Config{Model: Script()})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	saver := checkpoint.NewMemory()
	for _, thread := range []string{"t1", "t2", "t3"} {
		res, err := app.Graph.Invoke(context.Background(), app.Input(""), graph.WithCheckpointer(saver), graph.WithThread(thread))
		if err != nil {
			t.Fatalf("%s: %v", thread, err)
		}
		if out := app.Outcome(context.Background(), res.State); !strings.Contains(out, "No changes needed") || !strings.Contains(out, "free prepaid return label") {
			t.Errorf("%s:\n%s", thread, out)
		}
	}
}

// An agent declared as data in the settings replaces the default one:
// parallel branches, a join, per-node descriptions, tools by name.
func TestAgentFromSettings(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Namespace("plan:"), llmtest.Text("plan")).Repeat()
	m.When(llmtest.And(llmtest.Namespace("facts:"), llmtest.Not(llmtest.LastIsToolResult())), llmtest.ToolCalls(llmtest.Call("lookup_policy", `{"topic":"returns"}`))).Repeat()
	m.When(llmtest.Namespace("facts:"), llmtest.Text("30 days")).Repeat()
	m.When(llmtest.Namespace("tone:"), llmtest.Text("warm")).Repeat()
	m.When(llmtest.Namespace("write:"), llmtest.Text("You have 30 days.")).Repeat()
	settings := `{"agent": {"name": "triage",
		"nodes": [{"name": "plan", "prompt": "Plan.", "description": "Plans the reply."},
			{"name": "facts", "prompt": "Facts.", "tools": ["lookup_policy"], "retries": 2, "timeout": "30s"},
			{"name": "tone", "prompt": "Tone."}, {"name": "write", "prompt": "Write."}],
		"entry": "plan", "parallel": [{"from": "plan", "to": ["facts", "tone"]}],
		"joins": [{"to": "write", "from": ["facts", "tone"]}], "end": ["write"]}}`
	app, err := Entry().Open(t.Context(), apps.Env{Model: m, Settings: json.RawMessage(settings)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Graph.Invoke(t.Context(), app.Input("Can I return it?"))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := react.Answer(res.State); a != "You have 30 days." {
		t.Errorf("answer %q", a)
	}
	bad := `{"agent": {"name": "x", "nodes": [{"name": "a", "prompt": "A.", "tools": ["drop_db"]}], "entry": "a"}}`
	if _, err := Entry().Open(t.Context(), apps.Env{Model: m, Settings: json.RawMessage(bad)}); err == nil || !strings.Contains(err.Error(), `"drop_db", which is not available (tools: lookup_policy)`) {
		t.Errorf("an unknown tool: %v", err)
	}
}

// The nodes' prompts are templates: the default names the answer node's
// tools, and a bad override fails the build naming the prompt.
func TestPromptsAreTemplates(t *testing.T) {
	m := Script().(*llmtest.Model)
	a, err := NewAgent(Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), agentbuilder.Input(Question)); err != nil {
		t.Fatal(err)
	}
	if got := m.Requests()[0].System(); !strings.Contains(got, "Check the policy with lookup_policy before") {
		t.Errorf("answer prompt %q", got)
	}
	if _, err := NewAgent(Config{Model: m, ReviewPrompt: "{{.Shop}}"}); err == nil || !strings.Contains(err.Error(), "ReviewPrompt") {
		t.Errorf("a bad template: %v", err)
	}
}
