package scheduler

import (
	"context"
	"encoding/json"
	"errors"
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

// apps.scheduler's phases and history reach the agent: the intent check
// goes to the model the settings name, and on a 500-turn thread it sees
// only the turns the policy keeps.
func TestEntryPhasesAndHistory(t *testing.T) {
	ctx := apps.WithScope(context.Background(), "s")
	cheap := llmtest.New(llmtest.WithName("test:cheap"))
	cheap.When(nil, llmtest.JSON(map[string]string{"intent": "task"})).Repeat()
	resolve := func(name string) (llm.Model, error) {
		if name == "cheap" {
			return cheap, nil
		}
		return nil, fmt.Errorf("no model %q", name)
	}
	app, err := Entry().Open(ctx, apps.Env{Model: Script(), Database: t.TempDir() + "/app.db", Scope: "s", Resolve: resolve,
		Settings: json.RawMessage(`{"phases": {"intent": {"model": "cheap", "temperature": 0}}, "history": {"policy": "last_turns", "turns": 2}}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	var long []llm.Message
	for i := range 500 {
		long = append(long, llm.User(fmt.Sprintf("old question %d", i)), llm.Assistant(fmt.Sprintf("old answer %d", i)))
	}
	input := append(graph.Writes(planexec.Messages.Set(long)), app.Input("")...)
	_, err = app.Graph.Invoke(ctx, input, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("s"))
	if err != nil && !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	reqs := cheap.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the intent model got %d requests; want 1", len(reqs))
	}
	r := reqs[0]
	if r.Temperature == nil || *r.Temperature != 0 {
		t.Errorf("intent request temperature %v; want 0", r.Temperature)
	}
	// The system prompt, the turn before and the request.
	if len(r.Messages) != 4 || !strings.Contains(r.Messages[1].Text(), "old question 499") {
		t.Errorf("the intent request carries %d messages; want 4 ending with the last old turn", len(r.Messages))
	}
	if _, err := Entry().Open(ctx, apps.Env{Model: Script(), Database: t.TempDir() + "/app.db", Resolve: resolve,
		Settings: json.RawMessage(`{"phases": {"routing": {}}}`)}); err == nil || !strings.Contains(err.Error(), "phases.routing") {
		t.Errorf("an unknown phase: %v", err)
	}
}
