package console

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
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
		{[]string{"e", "{not json", "e", `{"task":"Fill","stepz":[]}`, "e", edited}, planexec.EditPlan(planexec.Plan{Task: "Fill", Steps: []planexec.Step{{ID: "a", Title: "A", Description: "d"}}})},
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

// TestPlanEditRejectsUnknownFieldsByName: an edited plan with a field the
// schema lacks is refused with the field's name, an invalid one with the
// plan's problems; neither is silently taken.
func TestPlanEditRejectsUnknownFieldsByName(t *testing.T) {
	for raw, want := range map[string]string{
		`{"task":"Fill","stepz":[]}`: `unknown field "stepz"`,
		`{"task":"Fill","steps":[{"id":"a","title":"A","description":"d","after":["b"]}]}`:       `unknown field "after"`,
		`{"task":"Fill","steps":[{"id":"a","title":"A","description":"d","depends_on":["zz"]}]}`: "zz",
		`{"task":"Fill"`: "not valid JSON",
	} {
		if _, err := ParsePlan([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePlan(%s) = %v, want it to say %q", raw, err, want)
		}
	}
	plan := planexec.Plan{Task: "Fill the week", Steps: []planexec.Step{{ID: "s1", Title: "Look at the week", Description: "d"}}}
	var out strings.Builder
	got, _, err := PlanReview(&Prompter{Out: &out, Answers: []string{"e", `{"task":"x","steps":[],"notes":"hi"}`, "y"}}, interrupt(t, planexec.PlanReview{Kind: planexec.ReviewKind, Plan: plan}))
	if err != nil || !strings.Contains(out.String(), `That plan was not taken: unknown field "notes"`) {
		t.Errorf("review: %v\n%s", err, out.String())
	}
	if d := cmp.Diff(planexec.ApprovePlan(), got); d != "" {
		t.Errorf("after the refused edit (-want +got):\n%s", d)
	}
}

// TestPlanEditOpensTheEditor: with an editor set and "e" typed, the plan
// opens in the editor as indented JSON and the saved file is the edit.
func TestPlanEditOpensTheEditor(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen.json")
	script := filepath.Join(dir, "editor.sh")
	// The "editor" keeps a copy of what it was given and saves a new plan.
	body := "#!/bin/sh\ncp \"$1\" " + seen + "\nprintf '%s' '{\"task\":\"Edited\",\"steps\":[{\"id\":\"e1\",\"title\":\"Only step\",\"description\":\"do it\"}]}' > \"$1\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	plan := planexec.Plan{Task: "Fill the week", Steps: []planexec.Step{{ID: "s1", Title: "Look at the week", Description: "d"}}}
	var out strings.Builder
	p := &Prompter{Out: &out, In: bufio.NewReader(strings.NewReader("e\n")), Editor: script, EditorIO: &out}
	got, _, err := PlanReview(p, interrupt(t, planexec.PlanReview{Kind: planexec.ReviewKind, Plan: plan}))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := planexec.EditPlan(planexec.Plan{Task: "Edited", Steps: []planexec.Step{{ID: "e1", Title: "Only step", Description: "do it"}}})
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("decision (-want +got):\n%s\n%s", d, out.String())
	}
	given, err := os.ReadFile(seen)
	if err != nil || !strings.Contains(string(given), "\"task\": \"Fill the week\",\n  \"steps\": [") {
		t.Errorf("the editor was given %q (%v)", given, err)
	}
}

// TestDeliveryStreams: the delivered answer is printed as its tokens
// arrive, and not again when the delivered event follows.
func TestDeliveryStreams(t *testing.T) {
	var out strings.Builder
	v := &PlanView{}
	for _, tok := range []string{"Your ", "week ", "is planned."} {
		v.Print(&out, graph.Event{Kind: graph.EventMessages, Node: planexec.DeliverNode, Message: graph.MessageChunk{Part: graph.PartText, Text: tok}})
		if !strings.HasSuffix(out.String(), tok) {
			t.Fatalf("token %q not printed at once:\n%s", tok, out.String())
		}
	}
	v.Print(&out, graph.Event{Kind: graph.EventMessages, Node: "model", Namespace: "step:x", Message: graph.MessageChunk{Part: graph.PartText, Text: "step talk"}})
	v.Print(&out, graph.Event{Kind: graph.EventCustom, Custom: planexec.Event{Kind: planexec.EventDelivered, Text: "Your week is planned."}})
	if got := out.String(); got != "\nDelivered:\nYour week is planned.\n" {
		t.Errorf("printed %q", got)
	}
}
