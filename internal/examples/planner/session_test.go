package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/internal/examples/console"
)

// The scenario as the CLI runs it: the example opened on its script, a
// console session answering every prompt from the answers file.
func TestSessionWithAnswersFile(t *testing.T) {
	ctx := context.Background()
	ex := Example()
	if ex.Name != "planner" || ex.Summary == "" {
		t.Errorf("example %q: %q", ex.Name, ex.Summary)
	}
	inst, err := ex.Open(ctx, examples.Env{Model: ex.Script(), DataDir: t.TempDir(), Thread: "planner"})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := console.LoadAnswers("testdata/answers.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	prompt := &console.Prompter{Out: &out, Answers: lines, Handlers: append(slices.Clone(inst.Handlers), console.ToolApproval)}
	s := &console.Session{
		Graph:   inst.Graph,
		Options: append([]graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("planner")}, inst.Options...),
		Prompt:  prompt,
		Out:     &out,
		Events:  inst.Events,
		Print:   inst.Print,
	}
	final, err := s.Run(ctx, inst.Input)
	transcript := out.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, transcript)
	}
	if len(prompt.Answers) != 0 {
		t.Errorf("%d answers were left over: %q", len(prompt.Answers), prompt.Answers)
	}
	// What the person sees, in this order.
	want := []string{
		"Question: " + CityQuestion,
		"1) Lisbon",
		"Choose > 1",
		"Question: " + FormQuestion,
		"Number of people (number, required, 1 to 40) > 80",
		"Length (select, required):",
		"Anything we should know (text, any to 200) > vegetarian food, please",
		"(the last answer did not fit: Number of people must be at most 40)",
		"Number of people (number, required, 1 to 40) > 12",
		"Plan ready:",
		"venues. Find venues [replan after]",
		"budget. Estimate the budget (after venues, activity)",
		"book. Book the venue (after availability, budget)",
		"Review the plan above.",
		"Run this plan?",
		"> step venues: Find venues",
		"calls search_venues",
		"The plan was revised:",
		"check_verde. Check Quinta Verde (after venues)",
		"book. Book the better venue (after check_rio, check_verde, budget)",
		"Approval needed: Book Quinta Verde for 12 people, 2 days from Jun 9",
		"book_venue -> Booked Quinta Verde",
		"Delivered:\n" + DeliveredText,
	}
	pos := 0
	for _, w := range want {
		i := strings.Index(transcript[pos:], w)
		if i < 0 {
			t.Fatalf("the transcript lacks %q after position %d:\n%s", w, pos, transcript)
		}
		pos += i + len(w)
	}
	// Each tool ran once per call: the finished steps did not run again.
	for name, n := range map[string]int{SearchVenues: 1, ListActivities: 1, CheckAvailability: 2, EstimateBudget: 2, BookVenue: 1} {
		if got := strings.Count(transcript, "calls "+name+" "); got != n {
			t.Errorf("the transcript shows %d calls of %s; want %d", got, name, n)
		}
	}
	if strings.Contains(transcript, "> step availability") {
		t.Error("the replaced availability step started")
	}
	outcome := inst.Outcome(final)
	for _, w := range []string{"Answer:\n" + DeliveredText, "[done] check_rio: Check Casa do Rio", "[done] book: Book the better venue", "OFF-001: Quinta Verde from Jun 9, 2 days, 12 people"} {
		if !strings.Contains(outcome, w) {
			t.Errorf("the outcome lacks %q:\n%s", w, outcome)
		}
	}
}
