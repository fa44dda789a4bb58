package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// The scenario as the CLI runs it: the example opened on its script, a
// console session answering every prompt from the answers file.
func TestSessionWithAnswersFile(t *testing.T) {
	ctx := context.Background()
	e := Entry()
	if e.Name != "planner" || e.Summary == "" {
		t.Errorf("app %q: %q", e.Name, e.Summary)
	}
	ctx = apps.WithScope(ctx, "planner")
	app, err := e.Open(ctx, apps.Env{Model: e.Script(), DataDir: t.TempDir(), Scope: "planner"})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	lines, err := terminal.LoadAnswers("testdata/answers.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s := terminal.NewSession(app, terminal.Streams{Out: &out}, lines, append([]graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("planner")}, app.Options...))
	final, err := s.Run(ctx, app.Input(""))
	transcript := out.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, transcript)
	}
	if len(s.Unused()) != 0 {
		t.Errorf("%d answers were left over: %q", len(s.Unused()), s.Unused())
	}
	// What the person sees, in this order.
	want := []string{
		"Question: " + CityQuestion,
		"1) Lisbon",
		"Choose > 1",
		"Question: " + FormQuestion,
		"Number of people (number, required, 1 to 40) > 80",
		"Number of people must be at most 40; try again.",
		"Number of people (number, required, 1 to 40) > 12",
		"Length (choose one, required):",
		"Anything we should know (text, optional, at most 200 characters) > vegetarian food, please",
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
	outcome := app.Outcome(ctx, final)
	for _, w := range []string{"Answer:\n" + DeliveredText, "[done] check_rio: Check Casa do Rio", "[done] book: Book the better venue", "OFF-001: Quinta Verde from Jun 9, 2 days, 12 people"} {
		if !strings.Contains(outcome, w) {
			t.Errorf("the outcome lacks %q:\n%s", w, outcome)
		}
	}
}

// TestFormIsNotAskedTwice: a value out of range is asked again at once, so
// the form's other fields are asked only once.
func TestFormIsNotAskedTwice(t *testing.T) {
	ctx := apps.WithScope(context.Background(), "planner")
	app, err := New(ctx, Config{Model: Script()})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	lines, err := terminal.LoadAnswers("testdata/answers.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s := terminal.NewSession(app, terminal.Streams{Out: &out}, lines, []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("planner")})
	if _, err := s.Run(ctx, app.Input("")); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), "Length (choose one"); n != 1 {
		t.Errorf("the length field was asked %d times, want 1:\n%s", n, out.String())
	}
	if strings.Contains(out.String(), "did not fit") {
		t.Errorf("the form was sent back whole:\n%s", out.String())
	}
}

// TestScriptServesManyThreads: one scripted model and one App serve
// several threads, each to the end, with its own bookings.
func TestScriptServesManyThreads(t *testing.T) {
	app, err := New(context.Background(), Config{Model: Script()})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	saver := checkpoint.NewMemory()
	for _, thread := range []string{"t1", "t2"} {
		ctx := apps.WithScope(context.Background(), thread)
		opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(thread)}
		res, err := app.Graph.Invoke(ctx, app.Input(""), opts...)
		for i := 0; len(res.Interrupts) > 0 && i < 10; i++ {
			answers := map[string]any{}
			for _, in := range res.Interrupts {
				if a, ok := planexec.AskFrom(in); ok {
					if a.Mode == planexec.AskSelect {
						answers[in.ID] = planexec.ChoiceAnswer(Cities[0])
					} else {
						answers[in.ID] = planexec.FormAnswer(map[string]any{"people": 12, "length": Lengths[1]})
					}
				} else if _, ok := planexec.ReviewFrom(in); ok {
					answers[in.ID] = planexec.ApprovePlan()
				} else {
					answers[in.ID] = tool.Approve()
				}
			}
			res, err = app.Graph.Invoke(ctx, nil, append(opts, graph.WithResumeMap(answers))...)
		}
		if err != nil || res.Status != graph.StatusCompleted {
			t.Fatalf("%s: %v %v", thread, res.Status, err)
		}
		if out := app.Outcome(ctx, res.State); !strings.Contains(out, "Bookings:\n  OFF-001: Quinta Verde from Jun 9") {
			t.Errorf("%s should show its own one booking:\n%s", thread, out)
		}
	}
}
