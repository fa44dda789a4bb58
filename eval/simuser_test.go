package eval_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// users resolves every simulated user's model to m, and says which names
// it was asked for.
func users(m llm.Model, asked *[]string) eval.UserResolver {
	return func(_ context.Context, name string) (llm.Model, error) {
		*asked = append(*asked, name)
		if name == "missing" {
			return nil, errors.New("not declared")
		}
		return m, nil
	}
}

// A simulated user opens the conversation, answers the agent's questions
// (the case's own answers first), says more after a turn and ends when its
// goal is met; what it said is in the result, in order.
func TestSimulatedUserDrivesTheConversation(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.LastUserContains("start the conversation"), llmtest.JSON(map[string]any{"message": "ask me first"}))
	m.When(llmtest.LastUserContains("Proceed with"), llmtest.JSON(map[string]any{"answer": "yes"}))
	m.When(llmtest.LastUserContains("Which one?"), llmtest.JSON(map[string]any{"answer": "the blue one"}))
	m.When(llmtest.LastUserContains("finished its turn"),
		llmtest.JSON(map[string]any{"message": "twice please"}),
		llmtest.JSON(map[string]any{"done": true, "reason": "I got both answers"}))
	ds := &eval.Dataset{Name: "sim", Cases: []eval.Case{{
		ID: "sim", User: &eval.SimulatedUser{Model: "user-model", Persona: "a busy manager", Goal: "get two echoes"},
		// The case's own answer takes the question it matches; the
		// user answers the rest.
		Answers:  []eval.Answer{{Kind: "confirm", Value: raw(`"ok"`)}},
		Criteria: []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":"echo: twice please (the blue one)"}`)}},
	}}}
	var asked []string
	exp, err := (&eval.Runner{Target: newTarget(t), Experiment: "sim", Users: users(m, &asked)}).Run(context.Background(), ds)
	if err != nil {
		t.Fatal(err)
	}
	tr := exp.Cases[0].Trials[0]
	if !tr.Pass {
		t.Fatalf("the case failed: %s %+v", tr.Error, tr.Scores)
	}
	if !slices.Equal(asked, []string{"user-model"}) {
		t.Errorf("resolved %v, want the case's model", asked)
	}
	var got []string
	for _, s := range tr.Simulated {
		got = append(got, s.Kind+":"+s.Text+string(s.Value))
	}
	want := []string{"message:ask me first", "message:twice please", `answer:"the blue one"`, "done:I got both answers"}
	if !slices.Equal(got, want) {
		t.Errorf("the simulated turns %q, want %q", got, want)
	}
	if tr.Simulated[2].Question != "Which one?" || tr.Simulated[2].InterruptKind != "choice" {
		t.Errorf("the answer records the question %+v", tr.Simulated[2])
	}
	// The user model reads its persona and goal, and the conversation.
	reqs := m.Requests()
	if sys := reqs[0].System(); !strings.Contains(sys, "a busy manager") || !strings.Contains(sys, "get two echoes") {
		t.Errorf("the user's instructions: %s", sys)
	}
	if last := reqs[len(reqs)-1].LastUser(); !strings.Contains(last, "Agent: echo: ask me first (ok)") || !strings.Contains(last, "You: twice please") {
		t.Errorf("the user's last view of the conversation: %s", last)
	}
}

// A user that never reaches its goal stops at its turn limit, failing the
// case; so does one whose model is not declared, or that answers nonsense.
func TestSimulatedUserLimits(t *testing.T) {
	chatty := llmtest.New()
	chatty.When(llmtest.Any(), llmtest.JSON(map[string]any{"message": "and more"})).Repeat()
	garbled := llmtest.New()
	garbled.When(llmtest.Any(), llmtest.Text("sure thing")).Repeat()
	cases := []struct {
		name  string
		model llm.Model
		user  eval.SimulatedUser
		want  string
	}{
		{"limit", chatty, eval.SimulatedUser{Goal: "never", MaxTurns: 3}, "limit of 3 turns"},
		{"undeclared", chatty, eval.SimulatedUser{Model: "missing", Goal: "x"}, `model "missing": not declared`},
		{"garbled", garbled, eval.SimulatedUser{Goal: "x"}, "did not answer with a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := &eval.Dataset{Name: "sim", Cases: []eval.Case{{ID: "c", Input: eval.Input{Message: "hello"}, User: &tc.user,
				Criteria: []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":"echo"}`)}}}}}
			var asked []string
			exp, err := (&eval.Runner{Target: newTarget(t), Experiment: "sim", Users: users(tc.model, &asked)}).Run(context.Background(), ds)
			if err != nil {
				t.Fatal(err)
			}
			tr := exp.Cases[0].Trials[0]
			if tr.Pass || !strings.Contains(tr.Error, tc.want) {
				t.Errorf("pass %v error %q, want one saying %q", tr.Pass, tr.Error, tc.want)
			}
		})
	}
}

// A simulated user needs a goal, no fixed turns, and a runner that can
// resolve its model.
func TestSimulatedUserChecks(t *testing.T) {
	crit := []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":"echo"}`)}}
	for name, c := range map[string]eval.Case{
		"no goal":      {ID: "c", User: &eval.SimulatedUser{}, Criteria: crit},
		"fixed turns":  {ID: "c", User: &eval.SimulatedUser{Goal: "g"}, Turns: []eval.Turn{{Message: "hi"}}, Criteria: crit},
		"negative max": {ID: "c", User: &eval.SimulatedUser{Goal: "g", MaxTurns: -1}, Criteria: crit},
	} {
		if _, err := (&eval.Runner{Target: newTarget(t), Experiment: "x"}).Run(context.Background(), &eval.Dataset{Name: "d", Cases: []eval.Case{c}}); err == nil {
			t.Errorf("%s: the runner took the case", name)
		}
	}
	exp, err := (&eval.Runner{Target: newTarget(t), Experiment: "x"}).Run(context.Background(),
		&eval.Dataset{Name: "d", Cases: []eval.Case{{ID: "c", User: &eval.SimulatedUser{Goal: "g"}, Criteria: crit}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := exp.Cases[0].Trials[0].Error; !strings.Contains(e, "Runner.Users") {
		t.Errorf("without a resolver the trial says %q", e)
	}
}
