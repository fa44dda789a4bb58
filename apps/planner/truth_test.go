package planner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// drive runs the scripted planner on a new thread: the request, the city,
// the form, then every plan review approved (or answered by review) and
// every booking answered by book, until the run ends.
type drive struct {
	t      *testing.T
	agency *Agency
	th     *thread
	plans  []planexec.PlanReview
	asked  []tool.ApprovalRequest
}

func newDrive(t *testing.T) *drive {
	agency := NewAgency()
	g, err := NewGraph(Script(), agency)
	if err != nil {
		t.Fatal(err)
	}
	return &drive{t: t, agency: agency, th: &thread{t: t, g: g, opts: []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("truth")}}}
}

// run answers until the run ends and returns the final state.
func (d *drive) run(request, city string, form map[string]any, review func(n int) planexec.ReviewDecision, book func(tool.ApprovalRequest) tool.Decision) graph.State {
	d.t.Helper()
	out := d.th.run(planexec.Input(request), nil)
	for i := 0; len(out.interrupts) > 0; i++ {
		if i == 12 {
			d.t.Fatalf("still waiting after %d answers", i)
		}
		in := only(d.t, out)
		var answer any
		if q, ok := planexec.AskFrom(in); ok {
			if q.Mode == planexec.AskSelect {
				answer = planexec.ChoiceAnswer(city)
			} else {
				answer = planexec.FormAnswer(form)
			}
		} else if r, ok := planexec.ReviewFrom(in); ok {
			d.plans = append(d.plans, r)
			answer = review(len(d.plans) - 1)
		} else if r, ok := tool.ApprovalFrom(in); ok {
			d.asked = append(d.asked, r)
			answer = book(r)
		} else {
			d.t.Fatalf("unexpected interrupt %s", in.Payload)
		}
		out = d.th.run(nil, answer)
	}
	return out.state
}

func approveAll(int) planexec.ReviewDecision { return planexec.ApprovePlan() }

func delivered(t *testing.T, s graph.State) string {
	t.Helper()
	a, ok := planexec.Answer(s)
	if !ok {
		t.Fatal("no answer delivered")
	}
	return a
}

// What the person answers is what the planner plans and books: Berlin, 8
// people, 3 days — never the scenario's Lisbon and 12.
func TestScriptHonoursTheAnswers(t *testing.T) {
	d := newDrive(t)
	final := d.run(Task, "Berlin", map[string]any{"people": 8, "length": "3 days"}, approveAll, func(tool.ApprovalRequest) tool.Decision { return tool.Approve() })
	task := d.plans[0].Plan.Task
	if !strings.Contains(task, "3-day offsite in Berlin for 8 people") {
		t.Errorf("the plan's task is %q", task)
	}
	var args struct {
		Venue  string `json:"venue"`
		People int    `json:"people"`
		Days   int    `json:"days"`
	}
	if len(d.asked) != 1 || json.Unmarshal(d.asked[0].Arguments, &args) != nil || args.Venue != "Kiez Studio" || args.People != 8 || args.Days != 3 {
		t.Fatalf("booking asked: %+v", d.asked)
	}
	answer := delivered(t, final)
	if !strings.HasPrefix(answer, "Your offsite is booked: Kiez Studio for 8 people, 3 days from Jun 17") {
		t.Errorf("answer %q", answer)
	}
	for _, wrong := range []string{"Lisbon", "12 people", "Quinta Verde"} {
		if strings.Contains(answer, wrong) || strings.Contains(task, wrong) {
			t.Errorf("%q in the plan or the answer:\n%s\n%s", wrong, task, answer)
		}
	}
	if b := d.agency.Bookings(); len(b) != 1 || b[0].Venue != "Kiez Studio" || b[0].People != 8 || b[0].Days != 3 {
		t.Errorf("bookings %v", b)
	}
}

// A booking the person rejects with a reason is not booked, and the
// answer says so with the reason; one refused for its arguments (an edit
// to 500 people) is not reported done either.
func TestScriptReportsAWriteThatDidNotHappen(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decision tool.Decision
		want     []string
		undone   string
	}{
		{"rejected", tool.Reject("too far from the office"), []string{"Nothing was booked: you rejected booking Quinta Verde", `"too far from the office"`}, planexec.CallRejected},
		{"failed", tool.Edit(json.RawMessage(`{"venue":"Quinta Verde","start":"Jun 9","days":2,"people":500}`)), []string{"Nothing was booked: booking Quinta Verde for 12 people", "failed", "people is 500"}, planexec.CallFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDrive(t)
			final := d.run(Task, "Lisbon", map[string]any{"people": 12, "length": "2 days"}, approveAll, func(tool.ApprovalRequest) tool.Decision { return tc.decision })
			answer := delivered(t, final)
			for _, w := range tc.want {
				if !strings.Contains(answer, w) {
					t.Errorf("the answer lacks %q:\n%s", w, answer)
				}
			}
			if strings.Contains(answer, "is booked") || strings.Contains(answer, "confirmation") {
				t.Errorf("the answer claims a booking:\n%s", answer)
			}
			book := planexec.Steps.Get(final)[StepBook]
			if len(book.Undone) != 1 || book.Undone[0].Outcome != tc.undone {
				t.Errorf("the booking step's outcome: %+v", book)
			}
			if strings.Contains(book.Result, "Booked") || len(d.agency.Bookings()) != 0 {
				t.Errorf("step result %q, bookings %v", book.Result, d.agency.Bookings())
			}
		})
	}
}

// Rejecting the plan with "skip the activity" gives a plan without it, and
// the run never looks for one; feedback the demo cannot follow is said.
func TestScriptFollowsPlanFeedback(t *testing.T) {
	d := newDrive(t)
	final := d.run(Task, "Prague", map[string]any{"people": 10, "length": "1 day"}, func(n int) planexec.ReviewDecision {
		switch n {
		case 0:
			return planexec.RejectPlan("skip the activity")
		case 1:
			return planexec.RejectPlan("and check the weather")
		case 2:
			return planexec.RejectPlan("Add a step for the catering")
		}
		return planexec.ApprovePlan()
	}, func(tool.ApprovalRequest) tool.Decision { return tool.Approve() })
	has := func(p planexec.Plan, id string) bool {
		return slices.ContainsFunc(p.Steps, func(s planexec.Step) bool { return s.ID == id })
	}
	if !has(d.plans[0].Plan, StepActivity) || has(d.plans[1].Plan, StepActivity) || has(d.plans[2].Plan, StepActivity) {
		t.Errorf("the activity step: first plan %v, after the feedback %v", has(d.plans[0].Plan, StepActivity), has(d.plans[1].Plan, StepActivity))
	}
	if d.agency.Calls(ListActivities) != 0 {
		t.Error("the activities were listed after the person skipped them")
	}
	if !strings.Contains(d.plans[2].Plan.Task, "cannot do: and check the weather") {
		t.Errorf("feedback the demo cannot follow is not said: %q", d.plans[2].Plan.Task)
	}
	if !slices.ContainsFunc(d.plans[3].Plan.Steps, func(s planexec.Step) bool { return s.Title == "The catering" }) {
		t.Errorf("the step asked for is not in the plan: %+v", d.plans[3].Plan.Steps)
	}
	if r := planexec.Steps.Get(final)["added1"]; !strings.HasPrefix(r.Result, "Not done:") {
		t.Errorf("the added step claims %q", r.Result)
	}
	answer := delivered(t, final)
	if !strings.HasPrefix(answer, "Your offsite is booked: Old Town Rooms for 10 people, 1 day from Jun 3") || strings.Contains(answer, "with the") {
		t.Errorf("answer %q", answer)
	}
	if !strings.Contains(answer, "You also asked for: and check the weather — this scripted demo cannot do that") {
		t.Errorf("the answer does not say what it could not do: %q", answer)
	}
}

// A step the person added survives the replan: the revised plan shown for
// review keeps it, and its answer says the demo has no tool for it.
func TestScriptKeepsTheEditedPlan(t *testing.T) {
	d := newDrive(t)
	final := d.run(Task, "Lisbon", map[string]any{"people": 12, "length": "2 days"}, func(n int) planexec.ReviewDecision {
		if n > 0 {
			return planexec.ApprovePlan()
		}
		p := d.plans[0].Plan
		p.Steps = append(p.Steps, planexec.Step{ID: "invite", Title: "Send the invitations", DependsOn: []string{StepBook}})
		return planexec.EditPlan(p)
	}, func(tool.ApprovalRequest) tool.Decision { return tool.Approve() })
	if len(d.plans) != 2 || !d.plans[1].Revised || !slices.ContainsFunc(d.plans[1].Plan.Steps, func(s planexec.Step) bool { return s.ID == "invite" }) {
		t.Fatalf("the revision dropped the person's step: %+v", d.plans)
	}
	r := planexec.Steps.Get(final)["invite"]
	if !strings.Contains(r.Result, "no tool") {
		t.Errorf("the person's step claims %q", r.Result)
	}
	if answer := delivered(t, final); !strings.Contains(answer, "Not done: Send the invitations") {
		t.Errorf("the answer does not say the invitations were not sent: %q", answer)
	}
}

// Asked something outside its scenario, the scripted model says what it
// can demonstrate instead of planning an offsite.
func TestScriptSaysWhatItCanDemonstrate(t *testing.T) {
	d := newDrive(t)
	out := d.th.run(planexec.Input("How many customers signed up last week?"), nil)
	if len(out.interrupts) != 0 {
		t.Fatalf("it asked %s", out.interrupts[0].Payload)
	}
	if answer := delivered(t, out.state); answer != Scope {
		t.Errorf("answer %q", answer)
	}
}
