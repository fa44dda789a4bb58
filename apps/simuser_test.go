package apps_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// A planner case with a simulated user instead of fixed answers: a
// scripted user model picks the city, fills the form, approves the plan
// and the booking, and ends when the offsite is booked. The case passes
// the planner set's own criteria for its booked case, and the result
// records what the user said.
func TestPlannerCaseWithASimulatedUser(t *testing.T) {
	ctx := context.Background()
	booked := caseOf(t, filepath.Join("planner", "eval", "planner.jsonl"), "lisbon-booked")
	user := llmtest.New(llmtest.WithName("llmtest:user"))
	user.When(llmtest.LastUserContains("Which city"), llmtest.JSON(map[string]any{"answer": "Lisbon"}))
	user.When(llmtest.LastUserContains("A few details"), llmtest.JSON(map[string]any{"answer": map[string]any{"people": 12, "length": "2 days", "notes": "vegetarian food, please"}})).Repeat()
	user.When(llmtest.LastUserContains("planexec_plan_review"), llmtest.JSON(map[string]any{"answer": map[string]any{"action": "approve"}})).Repeat()
	user.When(llmtest.LastUserContains("tool_approval"), llmtest.JSON(map[string]any{"answer": map[string]any{"action": "approve"}})).Repeat()
	user.When(llmtest.LastUserContains("finished its turn"), llmtest.JSON(map[string]any{"done": true, "reason": "the offsite is booked"}))

	c := *booked
	c.Answers = nil
	c.User = &eval.SimulatedUser{Model: "user", Persona: "a team lead organising an offsite", Goal: "book a two-day offsite in Lisbon for 12 people", MaxTurns: 8}
	app := appTargets(ctx)["planner"]
	r := &eval.Runner{Target: app.open(t, planner.Script()), Experiment: "simulated-planner",
		Users: func(_ context.Context, name string) (llm.Model, error) { return user, nil }}
	exp, err := r.Run(ctx, &eval.Dataset{Name: "planner-simulated", Cases: []eval.Case{c}})
	if err != nil {
		t.Fatal(err)
	}
	tr := exp.Cases[0].Trials[0]
	if !tr.Pass {
		t.Fatalf("the simulated case failed: %s", explain(exp.Cases[0]))
	}
	if !strings.HasPrefix(tr.Output, "Your offsite is booked") {
		t.Errorf("the final answer: %s", tr.Output)
	}
	var kinds []string
	for _, s := range tr.Simulated {
		k := s.Kind
		if s.InterruptKind != "" {
			k += ":" + s.InterruptKind
		}
		kinds = append(kinds, k)
	}
	if len(kinds) < 5 || kinds[0] != "answer:planexec_ask" || kinds[1] != "answer:planexec_ask" || kinds[len(kinds)-1] != "done" ||
		!slices.Contains(kinds, "answer:tool_approval") || !slices.Contains(kinds, "answer:planexec_plan_review") {
		t.Errorf("the simulated turns: %v", kinds)
	}
	var city string
	if err := json.Unmarshal(tr.Simulated[0].Value, &city); err != nil || city != "Lisbon" {
		t.Errorf("the first answer: %s", tr.Simulated[0].Value)
	}
	if len(tr.Simulated) > c.User.MaxTurns {
		t.Errorf("%d simulated turns over the limit of %d", len(tr.Simulated), c.User.MaxTurns)
	}
}
