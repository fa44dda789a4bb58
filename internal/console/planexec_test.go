package console

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/graph"
)

func interrupt(t *testing.T, payload any) graph.InterruptInfo {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return graph.InterruptInfo{ID: "x:0", Node: "plan", Payload: raw}
}

func fptr(f float64) *float64 { return &f }

func TestPlanAskModes(t *testing.T) {
	form := planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskForm, Question: "Your week?",
		Problems: []string{"hours must be at most 40"},
		Fields: []planexec.Field{
			{Key: "hours", Label: "Study hours", Type: planexec.FieldNumber, Required: true, Min: fptr(1), Max: fptr(40)},
			{Key: "focus", Label: "Focus", Type: planexec.FieldSelect, Options: []string{"math", "physics"}},
			{Key: "mornings", Label: "Mornings free", Type: planexec.FieldBoolean},
			{Key: "note", Label: "Note", Type: planexec.FieldText, Max: fptr(20)},
		}}
	cases := []struct {
		name  string
		ask   planexec.Ask
		lines []string
		want  planexec.AskAnswer
		shown []string
	}{
		{"text", planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskText, Question: "Anything else?"}, []string{"no"}, planexec.TextAnswer("no"), []string{"Question: Anything else?"}},
		{"select by number after a bad one", planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskSelect, Question: "Which week?", Options: []string{"this", "next"}},
			[]string{"9", "2"}, planexec.ChoiceAnswer("next"), []string{"2) next", "Type a number from 1 to 2."}},
		// Each value is checked as it is typed: an out-of-range number or
		// an overlong text is asked again at once, with the reason, and
		// the fields before it are not asked again.
		{"form", form, []string{"", "many", "41", "12", "physics", "maybe", "n", strings.Repeat("x", 21), "short"},
			planexec.FormAnswer(map[string]any{"hours": 12.0, "focus": "physics", "mornings": false, "note": "short"}),
			[]string{"did not fit: hours must be at most 40", "Study hours (number, required, 1 to 40) > ", "This field is required.",
				`Study hours must be a number; "many" is not; try again.`, "Study hours must be at most 40; try again.",
				"Focus (choose one, optional):", "Mornings free (y/n, optional) > maybe", "Mornings free takes y or n; try again.",
				"Note (text, optional, at most 20 characters) > ", "Note must be at most 20 characters long (it has 21); try again."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			p := &Prompter{Out: &out, Answers: c.lines}
			got, ok, err := PlanAsk(p, interrupt(t, c.ask))
			if !ok || err != nil {
				t.Fatalf("ok %v err %v", ok, err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("answer (-want +got):\n%s\n%s", d, out.String())
			}
			for _, s := range c.shown {
				if !strings.Contains(out.String(), s) {
					t.Errorf("transcript lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
	if _, ok, _ := PlanAsk(&Prompter{}, interrupt(t, map[string]string{"kind": "other"})); ok {
		t.Error("PlanAsk took an interrupt of another kind")
	}
}

func TestPlanReviewDecisions(t *testing.T) {
	plan := planexec.Plan{Task: "Fill the week", Replan: []string{"s1"}, Steps: []planexec.Step{
		{ID: "s1", Title: "Look at the week"}, {ID: "s2", Title: "Place tasks", DependsOn: []string{"s1"}}}}
	in := interrupt(t, planexec.PlanReview{Kind: planexec.ReviewKind, Plan: plan})
	edited := `{"task":"Fill","steps":[{"id":"a","title":"A","description":"d"}]}`
	for _, c := range []struct {
		lines []string
		want  planexec.ReviewDecision
	}{
		{[]string{"y"}, planexec.ApprovePlan()},
		{[]string{"what", "n", "do physics first"}, planexec.RejectPlan("do physics first")},
		{[]string{"e", "{not json", "e", edited}, planexec.EditPlan(planexec.Plan{Task: "Fill", Steps: []planexec.Step{{ID: "a", Title: "A", Description: "d"}}})},
	} {
		var out strings.Builder
		got, ok, err := PlanReview(&Prompter{Out: &out, Answers: c.lines}, in)
		if !ok || err != nil {
			t.Fatalf("ok %v err %v", ok, err)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("decision (-want +got):\n%s\n%s", d, out.String())
		}
		if !strings.Contains(out.String(), "s2. Place tasks (after s1)") || !strings.Contains(out.String(), "s1. Look at the week [replan after]") {
			t.Errorf("plan not shown:\n%s", out.String())
		}
	}
}

func TestPlanViewShowsAPlanOnce(t *testing.T) {
	plan := planexec.Plan{Task: "Fill the week", Steps: []planexec.Step{{ID: "s1", Title: "Look at the week"}}}
	var out strings.Builder
	v := &PlanView{}
	v.Print(&out, graph.Event{Kind: graph.EventCustom, Custom: planexec.Event{Kind: planexec.EventPlanReady, Plan: &plan}})
	if _, _, err := v.Review(&Prompter{Out: &out, Answers: []string{"y"}}, interrupt(t, planexec.PlanReview{Kind: planexec.ReviewKind, Plan: plan})); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "s1. Look at the week"); n != 1 || !strings.Contains(out.String(), "Review the plan above.") {
		t.Errorf("plan shown %d times:\n%s", n, out.String())
	}
	// A session resumed at the review (a new view) shows the plan.
	out.Reset()
	if _, _, err := new(PlanView).Review(&Prompter{Out: &out, Answers: []string{"y"}}, interrupt(t, planexec.PlanReview{Kind: planexec.ReviewKind, Plan: plan})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "The plan:\n  Task: Fill the week") {
		t.Errorf("a fresh view did not show the plan:\n%s", out.String())
	}
}
