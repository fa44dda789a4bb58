package planexec_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

func ptr(v float64) *float64 { return &v }

func TestAskCheck(t *testing.T) {
	form := planexec.Ask{Mode: planexec.AskForm, Fields: []planexec.Field{
		{Key: "n", Label: "Count", Type: planexec.FieldNumber, Required: true, Min: ptr(1)},
		{Key: "ok", Label: "Agree", Type: planexec.FieldBoolean},
		{Key: "name", Label: "Name", Type: planexec.FieldText, Min: ptr(2)},
	}}
	for _, tc := range []struct {
		name     string
		ask      planexec.Ask
		ans      planexec.AskAnswer
		text     string
		problems []string
	}{
		{"text", planexec.Ask{Mode: planexec.AskText}, planexec.TextAnswer(" soon "), "soon", nil},
		{"empty text", planexec.Ask{Mode: planexec.AskText}, planexec.TextAnswer("  "), "", []string{"the answer is empty"}},
		{"select by text", planexec.Ask{Mode: planexec.AskSelect, Options: []string{"Yes", "No"}}, planexec.TextAnswer("no"), "No", nil},
		{"select unknown", planexec.Ask{Mode: planexec.AskSelect, Options: []string{"Yes", "No"}}, planexec.ChoiceAnswer("maybe"), "",
			[]string{`choose one of the options (Yes, No); "maybe" is not one of them`}},
		{"form", form, planexec.FormAnswer(map[string]any{"n": 3.0, "ok": "true", "name": "Al"}), `{"n":3,"name":"Al","ok":true}`, nil},
		{"form problems", form, planexec.FormAnswer(map[string]any{"ok": "perhaps", "name": "A"}), "",
			[]string{"Count is required", "Agree must be true or false", "Name must be at least 2 characters long"}},
		{"form types", form, planexec.FormAnswer(map[string]any{"n": "many", "name": 5.0}), "",
			[]string{`Count must be a number; "many" is not`, "Name must be text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, probs := tc.ask.Check(tc.ans)
			if text != tc.text || !cmp.Equal(tc.problems, probs) {
				t.Errorf("Check = %q, %q; want %q, %q", text, probs, tc.text, tc.problems)
			}
		})
	}
}

// A question the model writes badly goes back to it as a tool error; no
// one is asked.
func TestBadQuestionGoesBackToPlanner(t *testing.T) {
	m := planning(
		askCall(`{"mode":"select","question":"Which?","options":["only"]}`),
		simplePlan(st("a", "Find")),
	)
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, AskMode: true})
	res, err := g.Invoke(context.Background(), planexec.Input("go"), thread(checkpoint.NewMemory(), "bad-q")...)
	if err != nil {
		t.Fatalf("err = %v (a bad question must not reach a person)", err)
	}
	sent := requestsFrom(m, node(planexec.PlanNode))[1].Messages
	last := sent[len(sent)-1]
	if !last.IsError || !strings.Contains(last.Text(), "at least two options") {
		t.Errorf("the planner got %+v", last)
	}
	if answer(t, res) != "Done." {
		t.Error("not delivered")
	}
}

// The ask tool's schema is what the model is offered: a mode enum and the
// field shape.
func TestAskToolSpec(t *testing.T) {
	m := planning(simplePlan(st("a", "Find")))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, AskMode: true})
	if _, err := g.Invoke(context.Background(), planexec.Input("go"), thread(checkpoint.NewMemory(), "spec")...); err != nil {
		t.Fatal(err)
	}
	req := requestsFrom(m, node(planexec.PlanNode))[0]
	if len(req.Tools) != 1 || req.Tools[0].Name != planexec.AskToolName {
		t.Fatalf("planner tools = %v", req.ToolNames())
	}
	var schema struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(req.Tools[0].Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"text", "select", "form"}, schema.Properties["mode"].Enum); d != "" {
		t.Errorf("mode enum (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"mode", "question"}, schema.Required); d != "" {
		t.Errorf("required (-want +got):\n%s", d)
	}
	// Interrupts from other sources are not questions.
	if _, ok := planexec.AskFrom(graph.InterruptInfo{Payload: json.RawMessage(`{"kind":"tool_approval"}`)}); ok {
		t.Error("AskFrom accepted a tool approval")
	}
}

// People answer questions and plan reviews plainly.
func TestPlainAnswers(t *testing.T) {
	for in, want := range map[string]planexec.AskAnswer{
		`"Rome"`:                  {Text: "Rome"},
		`{"choice":"Oslo"}`:       {Choice: "Oslo"},
		`{"nights":3,"veg":true}`: {Values: map[string]any{"nights": 3.0, "veg": true}},
		`{"values":{"nights":2}}`: {Values: map[string]any{"nights": 2.0}},
		`42`:                      {Text: "42"},
		`true`:                    {Text: "true"},
	} {
		var got planexec.AskAnswer
		if err := json.Unmarshal([]byte(in), &got); err != nil || !cmp.Equal(got, want) {
			t.Errorf("%s: %+v %v, want %+v", in, got, err, want)
		}
	}
	var a planexec.AskAnswer
	if err := json.Unmarshal([]byte(`["a","b"]`), &a); err == nil {
		t.Error("a list answer: no error")
	}
	for in, want := range map[string]planexec.ReviewDecision{
		`true`: planexec.ApprovePlan(), `"approve"`: planexec.ApprovePlan(), `"确认"`: planexec.ApprovePlan(),
		`false`: planexec.RejectPlan(""), `"否"`: planexec.RejectPlan(""),
		`"start on Monday instead"`: planexec.RejectPlan("start on Monday instead"),
		`{"action":"approve"}`:      planexec.ApprovePlan(),
	} {
		var got planexec.ReviewDecision
		if err := json.Unmarshal([]byte(in), &got); err != nil || !cmp.Equal(got, want) {
			t.Errorf("%s: %+v %v, want %+v", in, got, err, want)
		}
	}
	var d planexec.ReviewDecision
	if err := json.Unmarshal([]byte(`"  "`), &d); err == nil {
		t.Error("an empty review: no error")
	}
}
