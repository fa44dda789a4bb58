package planexec

import (
	"strings"
	"testing"
)

// The default step task is written by hand for speed; it must say exactly
// what DefaultStepTaskPrompt says, for every shape of step.
func TestStepTaskTextMatchesTemplate(t *testing.T) {
	tm, err := Prompts{}.parse()
	if err != nil {
		t.Fatal(err)
	}
	steps := []Step{{ID: "a", Title: "Prices"}, {ID: "b", Title: "Reviews"}, {ID: "c", Title: "Compare", DependsOn: []string{"a", "b"}}}
	for _, d := range []PromptData{
		{Task: "t", Steps: steps, Step: steps[0]},
		{Task: "t", Steps: steps, Step: Step{ID: "a", Title: "Prices", Description: "Find them.", DoneWhen: "two prices"}},
		{Task: "t", Steps: steps, Step: steps[2], Results: []StepReport{{ID: "a", Title: "Prices", Result: "10 and 12"}, {ID: "b", Title: "Reviews", Result: "good\nmostly"}}},
		{Task: "", Steps: nil, Step: Step{ID: "x"}},
	} {
		var b strings.Builder
		if err := tm.StepTask.Execute(&b, d); err != nil {
			t.Fatal(err)
		}
		if got := stepTaskText(d); got != b.String() {
			t.Errorf("stepTaskText:\n%q\ntemplate:\n%q", got, b.String())
		}
		if n, want := stepTaskSize(d), len(b.String()); n != want {
			t.Errorf("stepTaskSize = %d; the text is %d bytes long (the builder must be sized exactly)", n, want)
		}
	}
}
