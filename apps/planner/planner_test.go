package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// Every test must stop what it starts: step tasks, tool calls, streams.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seen is an agent event with the graph step whose task emitted it.
type seen struct {
	planexec.Event
	step int
}

// outcome is what one streamed run of the thread showed.
type outcome struct {
	events     []seen
	interrupts []graph.InterruptInfo
	state      graph.State
}

// thread drives one thread of the agent, keeping every event.
type thread struct {
	t      *testing.T
	g      *graph.Graph
	opts   []graph.RunOption
	events []seen
}

// run streams one run: the input, or a resume with answer.
func (th *thread) run(input graph.Update, answer any) outcome {
	th.t.Helper()
	opts := append(slices.Clone(th.opts), graph.WithEvents(graph.EventCustom|graph.EventInterrupt|graph.EventValues))
	if answer != nil {
		opts = append(opts, graph.WithResume(answer))
	}
	var out outcome
	var failed error
	for ev, err := range th.g.Stream(context.Background(), input, opts...) {
		if err != nil {
			failed = err
			break
		}
		switch {
		case ev.Kind == graph.EventInterrupt && ev.Namespace == "":
			out.interrupts = append(out.interrupts, ev.Interrupts...)
		case ev.Kind == graph.EventValues && ev.Namespace == "":
			out.state = ev.State
		}
		if e, ok := planexec.EventFrom(ev); ok {
			out.events = append(out.events, seen{e, ev.Step})
		}
	}
	if failed != nil {
		th.t.Fatalf("the run failed: %v", failed)
	}
	th.events = append(th.events, out.events...)
	return out
}

// only returns the one interrupt the run stopped with.
func only(t *testing.T, o outcome) graph.InterruptInfo {
	t.Helper()
	if len(o.interrupts) != 1 {
		t.Fatalf("the run stopped with %d interrupts; want 1: %+v", len(o.interrupts), o.interrupts)
	}
	return o.interrupts[0]
}

func question(t *testing.T, in graph.InterruptInfo) planexec.Ask {
	t.Helper()
	q, ok := planexec.AskFrom(in)
	if !ok {
		t.Fatalf("interrupt %s is not a question: %s", in.ID, in.Payload)
	}
	return q
}

// requests returns the model's requests a matcher accepts.
func requests(m *llmtest.Model, match llmtest.Matcher) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range m.Requests() {
		if match(&r) {
			out = append(out, r)
		}
	}
	return out
}

func stepIDs(p planexec.Plan) []string {
	ids := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		ids[i] = s.ID
	}
	return ids
}

// The whole scenario, answered in code: a choice, a form answered badly
// and then well, the plan approved, the booking approved.
func TestScenario(t *testing.T) {
	model := Script().(*llmtest.Model)
	agency := NewAgency()
	g, err := NewGraph(model, agency)
	if err != nil {
		t.Fatal(err)
	}
	th := &thread{t: t, g: g, opts: []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("offsite")}}

	// The planner asks for the city first.
	q := question(t, only(t, th.run(planexec.Input(Task), nil)))
	wantCity := planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskSelect, Question: CityQuestion, Options: Cities}
	if d := cmp.Diff(wantCity, q); d != "" {
		t.Fatalf("the first question (-want +got):\n%s", d)
	}

	// Then the form.
	first := only(t, th.run(nil, planexec.ChoiceAnswer("lisbon")))
	q = question(t, first)
	if q.Mode != planexec.AskForm || q.Question != FormQuestion || !cmp.Equal(q.Fields, FormFields()) {
		t.Fatalf("the second question = %+v", q)
	}
	if got := requests(model, llmtest.Node(planexec.PlanNode))[1].Messages; got[len(got)-1].Text() != "The user answered: Lisbon" {
		t.Errorf("the planner got the city as %q", got[len(got)-1].Text())
	}

	// A form answer that does not fit is asked again, with the problems,
	// before the planner hears of it.
	bad := planexec.FormAnswer(map[string]any{"people": 80, "length": "a week"})
	again := only(t, th.run(nil, bad))
	q = question(t, again)
	wantProblems := []string{"Number of people must be at most 40", "Length must be one of 1 day, 2 days, 3 days"}
	if d := cmp.Diff(wantProblems, q.Problems); d != "" || again.ID == first.ID {
		t.Errorf("asked again under ID %s (first %s) with problems (-want +got):\n%s", again.ID, first.ID, d)
	}
	if n := len(requests(model, llmtest.Node(planexec.PlanNode))); n != 2 {
		t.Errorf("the planner was asked %d times before the form fit; want 2", n)
	}

	// The fitting answer reaches the planner, whose plan is shown for review.
	good := planexec.FormAnswer(map[string]any{"people": 12, "length": "2 days", "notes": "vegetarian food, please"})
	review, ok := planexec.ReviewFrom(only(t, th.run(nil, good)))
	if !ok || !cmp.Equal(review.Plan, InitialPlan()) {
		t.Fatalf("review = %+v, %v; want the initial plan", review, ok)
	}
	plans := requests(model, llmtest.Node(planexec.PlanNode))
	if got := plans[2].Messages[len(plans[2].Messages)-1].Text(); got != `The user answered: {"length":"2 days","notes":"vegetarian food, please","people":12}` {
		t.Errorf("the planner got the form as %q", got)
	}
	if n := len(requests(model, llmtest.Namespace(planexec.StepNode+":"))); n != 0 {
		t.Fatalf("%d step requests before the plan was approved", n)
	}

	// Approved, the plan runs its first level; the replan that follows
	// changes approved steps, so the revised plan comes back for review.
	revised, ok := planexec.ReviewFrom(only(t, th.run(nil, planexec.ApprovePlan())))
	if !ok || !revised.Revised || !cmp.Equal(revised.Finished, []string{StepVenues, StepActivity}) ||
		!cmp.Equal(revised.Changed, []string{StepAvailability, StepBudget, StepBook, StepCheckRio, StepCheckVerde}) {
		t.Fatalf("after the first level: %+v; want the revised plan for review", revised)
	}
	// Approved too, the plan runs until the booking waits for approval.
	in := only(t, th.run(nil, planexec.ApprovePlan()))
	req, ok := tool.ApprovalFrom(in)
	if !ok || req.Tool != BookVenue || req.Summary != "Book Quinta Verde for 12 people, 2 days from Jun 9" {
		t.Fatalf("interrupt = %+v", in)
	}
	if !strings.HasPrefix(in.Namespace, planexec.StepNode+":") || agency.Calls(BookVenue) != 0 || len(agency.Bookings()) != 0 {
		t.Fatalf("before approval: namespace %q, %d booking calls, bookings %v", in.Namespace, agency.Calls(BookVenue), agency.Bookings())
	}

	final := th.run(nil, tool.Approve())
	if len(final.interrupts) != 0 {
		t.Fatalf("still waiting: %+v", final.interrupts)
	}

	checkLevels(t, th.events)
	checkReplan(t, model, th.events, final.state)
	checkTools(t, agency, th.events)

	// Every step of the final plan is done, and the answer delivered.
	want := map[string]planexec.StepStatus{}
	for _, id := range []string{StepVenues, StepActivity, StepCheckRio, StepCheckVerde, StepBudget, StepBook} {
		want[id] = planexec.StepDone
	}
	got := map[string]planexec.StepStatus{}
	for id, r := range planexec.Steps.Get(final.state) {
		got[id] = r.Status
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("step statuses (-want +got):\n%s", d)
	}
	if answer, _ := planexec.Answer(final.state); answer != DeliveredText {
		t.Errorf("answer = %q", answer)
	}
	deliver := requests(model, llmtest.Node(planexec.DeliverNode))
	if len(deliver) != 1 || !strings.Contains(deliver[0].LastUser(), "confirmation OFF-001") {
		t.Errorf("the delivery request did not carry the booking: %+v", deliver)
	}
	wantBookings := []Booking{{Code: "OFF-001", Venue: "Quinta Verde", Start: "Jun 9", Days: 2, People: 12}}
	if d := cmp.Diff(wantBookings, agency.Bookings()); d != "" {
		t.Errorf("bookings (-want +got):\n%s", d)
	}
	if n := model.Pending(); n != 0 {
		t.Errorf("%d scripted replies were never asked for", n)
	}
	out := Outcome(final.state, agency.Bookings())
	for _, s := range []string{"Answer:\n" + DeliveredText, "[done] venues: Find venues\n", "[done] book: Book the better venue", "OFF-001: Quinta Verde from Jun 9, 2 days, 12 people"} {
		if !strings.Contains(out, s) {
			t.Errorf("the outcome lacks %q:\n%s", s, out)
		}
	}
}

// checkLevels checks that each level's steps ran together, in one graph
// step, and the levels one after another; and that no step ran twice.
func checkLevels(t *testing.T, events []seen) {
	t.Helper()
	finishedAt := map[string][]int{}
	for _, e := range events {
		if e.Kind == planexec.EventStepFinished {
			finishedAt[e.StepID] = append(finishedAt[e.StepID], e.step)
		}
	}
	for id, steps := range finishedAt {
		if len(steps) != 1 {
			t.Errorf("step %s finished %d times", id, len(steps))
		}
	}
	at := func(id string) int {
		if s := finishedAt[id]; len(s) > 0 {
			return s[0]
		}
		t.Errorf("step %s never finished", id)
		return -1
	}
	one, two := at(StepVenues), at(StepCheckRio)
	if at(StepActivity) != one || at(StepCheckVerde) != two || at(StepBudget) != two || two <= one {
		t.Errorf("steps finished in graph steps %v; want venues and activity together, then check_rio, check_verde and budget together", finishedAt)
	}
	if _, ok := finishedAt[StepBook]; !ok {
		t.Error("the booking step never finished")
	}
	if _, ok := finishedAt[StepAvailability]; ok {
		t.Error("the availability step, replaced by the replan, ran")
	}
}

// checkReplan checks that the plan was revised once, after the first
// level: the finished steps kept (not run again), availability replaced.
func checkReplan(t *testing.T, model *llmtest.Model, events []seen, final graph.State) {
	t.Helper()
	var replans []planexec.Plan
	for _, e := range events {
		if e.Kind == planexec.EventReplanned && e.Plan != nil {
			replans = append(replans, *e.Plan)
		}
	}
	if len(replans) != 1 {
		t.Fatalf("%d replans; want 1", len(replans))
	}
	plan := planexec.CurrentPlan.Get(final)
	wantIDs := []string{StepVenues, StepActivity, StepCheckRio, StepCheckVerde, StepBudget, StepBook}
	if d := cmp.Diff(wantIDs, stepIDs(plan)); d != "" || !cmp.Equal(replans[0], plan) {
		t.Errorf("the final plan's steps (-want +got):\n%s", d)
	}
	if plan.Steps[0].Title != "Find venues" || len(plan.Replan) != 0 {
		t.Errorf("the finished venues step was changed by the replan (%q), or replan is left: %v", plan.Steps[0].Title, plan.Replan)
	}
	reports := requests(model, llmtest.Node(planexec.ReplanNode))
	if len(reports) != 1 || !strings.Contains(reports[0].LastUser(), "Casa do Rio: up to 20") {
		t.Errorf("the replanner did not see the venues found: %+v", reports)
	}
	// The finished steps' loops made their two requests each, not more.
	for _, id := range []string{StepVenues, StepActivity} {
		if n := len(requests(model, inStep(id))); n != 2 {
			t.Errorf("step %s made %d model requests; want 2 (it must not run again)", id, n)
		}
	}
	if n := len(requests(model, inStep(StepAvailability))); n != 0 {
		t.Errorf("the replaced availability step made %d requests", n)
	}
	// A new step sees the finished step's result.
	if !strings.Contains(requests(model, inStep(StepCheckRio))[0].LastUser(), "[venues] Find venues:\nTwo venues hold 12 people in Lisbon") {
		t.Error("check_rio's prompt lacks the venues found")
	}
}

// checkTools counts the tool executions per step, from the agent's events
// and from the agency itself.
func checkTools(t *testing.T, agency *Agency, events []seen) {
	t.Helper()
	got := map[string]int{}
	for _, e := range events {
		if e.Kind == planexec.EventToolResult && e.Tool != nil {
			got[e.StepID+"/"+e.Tool.Name]++
			if e.Tool.IsError {
				t.Errorf("step %s: %s failed: %s", e.StepID, e.Tool.Name, e.Tool.Result)
			}
		}
	}
	want := map[string]int{
		"venues/" + SearchVenues:           1,
		"activity/" + ListActivities:       1,
		"check_rio/" + CheckAvailability:   1,
		"check_verde/" + CheckAvailability: 1,
		"budget/" + EstimateBudget:         2,
		"book/" + BookVenue:                1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tool executions per step (-want +got):\n%s", d)
	}
	for name, n := range map[string]int{SearchVenues: 1, ListActivities: 1, CheckAvailability: 2, EstimateBudget: 2, BookVenue: 1} {
		if agency.Calls(name) != n {
			t.Errorf("the agency ran %s %d times; want %d", name, agency.Calls(name), n)
		}
	}
}

// Rejecting the plan sends the feedback to the planner, which plans again.
func TestRejectedPlanIsPlannedAgain(t *testing.T) {
	model := Script().(*llmtest.Model)
	g, err := NewGraph(model, NewAgency())
	if err != nil {
		t.Fatal(err)
	}
	th := &thread{t: t, g: g, opts: []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("reject")}}
	only(t, th.run(planexec.Input(Task), nil))
	only(t, th.run(nil, planexec.ChoiceAnswer("Lisbon")))
	only(t, th.run(nil, planexec.FormAnswer(map[string]any{"people": "12", "length": "2 days"})))
	waiting := th.run(nil, planexec.RejectPlan("check the weather too"))
	in := only(t, waiting)
	if _, ok := planexec.ReviewFrom(in); !ok {
		t.Fatalf("after the rejection the run asks %s", in.Payload)
	}
	plans := requests(model, llmtest.Node(planexec.PlanNode))
	if len(plans) != 4 || !strings.Contains(plans[3].LastUser(), "check the weather too") {
		t.Errorf("%d planner requests; the last one must carry the feedback", len(plans))
	}
	if n := len(requests(model, llmtest.Namespace(planexec.StepNode+":"))); n != 0 {
		t.Errorf("%d step requests before any plan was approved", n)
	}
	// The outcome of a thread that has not delivered says so, and lists
	// the plan's steps as not run.
	out := Outcome(waiting.state, nil)
	for _, s := range []string{"No answer was delivered.", "[not run] venues: Find venues", "[not run] book: Book the venue"} {
		if !strings.Contains(out, s) {
			t.Errorf("the outcome lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "Bookings:") {
		t.Errorf("the outcome lists bookings:\n%s", out)
	}
}

func TestNewNeedsAnAgencyAndAModel(t *testing.T) {
	if _, err := NewGraph(Script(), nil); err == nil || !strings.Contains(err.Error(), "agency is nil") {
		t.Errorf("New without an agency: %v", err)
	}
	if _, err := New(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "Model is nil") {
		t.Errorf("New without a model: %v", err)
	}
}
