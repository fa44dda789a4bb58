package planner

import (
	"encoding/json"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// The scripted scenario's questions and choices, which tests and the
// answers file (testdata/answers.txt) refer to.
const (
	CityQuestion = "Which city should the offsite be in?"
	FormQuestion = "A few details about the group"
	// DeliveredText is the scripted final answer.
	DeliveredText = "Your offsite is booked: Quinta Verde, a garden estate 25 minutes from Lisbon by train, " +
		"for 12 people on Jun 9 and 10 (confirmation OFF-001), with a vegetarian cooking class. " +
		"Estimated cost €3100 with catering, €500 less than Casa do Rio, which is only free from Jun 23."
)

// Cities are the options of the city question.
var Cities = []string{"Lisbon", "Berlin", "Prague"}

// Lengths are the options of the form's length field.
var Lengths = []string{"1 day", "2 days", "3 days"}

// FormFields are the fields of the form question: a required number with
// bounds, a required choice and optional free text.
func FormFields() []planexec.Field {
	lo, hi := 1.0, float64(MaxPeople)
	maxNote := 200.0
	return []planexec.Field{
		{Key: "people", Label: "Number of people", Type: planexec.FieldNumber, Required: true, Min: &lo, Max: &hi},
		{Key: "length", Label: "Length", Type: planexec.FieldSelect, Required: true, Options: Lengths},
		{Key: "notes", Label: "Anything we should know", Type: planexec.FieldText, Max: &maxNote},
	}
}

// The scripted plans' step IDs. Venues is named in replan; after its
// level, the replanner swaps Availability for CheckRio and CheckVerde.
const (
	StepVenues       = "venues"
	StepActivity     = "activity"
	StepAvailability = "availability"
	StepBudget       = "budget"
	StepBook         = "book"
	StepCheckRio     = "check_rio"
	StepCheckVerde   = "check_verde"
)

const planTask = "Plan and book a 2-day offsite in Lisbon for 12 people, with vegetarian food."

// InitialPlan is the scripted planner's plan: two parallel levels
// (venues and activity; availability and budget), then the booking.
func InitialPlan() planexec.Plan {
	return planexec.Plan{
		Task: planTask,
		Steps: []planexec.Step{
			{ID: StepVenues, Title: "Find venues", Description: "Search Lisbon for venues that hold 12 people.", DoneWhen: "the venues that fit are listed with their day rates"},
			{ID: StepActivity, Title: "Pick an activity", Description: "List Lisbon's activities and pick one that suits 12 people and vegetarian food.", DoneWhen: "one activity is chosen, with its price"},
			{ID: StepAvailability, Title: "Check availability", Description: "Check when the best venue is free for 2 days.", DependsOn: []string{StepVenues}},
			{ID: StepBudget, Title: "Estimate the budget", Description: "Estimate the cost of the venue, catering and the activity.", DependsOn: []string{StepVenues, StepActivity}},
			{ID: StepBook, Title: "Book the venue", Description: "Book the venue on its free days.", DependsOn: []string{StepAvailability, StepBudget}},
		},
		Replan: []string{StepVenues},
	}
}

// RevisedPlan is the scripted replanner's reply once the venues are known:
// the availability of both venues and their budgets in parallel, then the
// booking of the better one. It repeats the finished venues step, as
// models do; that step is kept as it was and does not run again.
func RevisedPlan() planexec.Plan {
	return planexec.Plan{
		Task: planTask,
		Steps: []planexec.Step{
			{ID: StepVenues, Title: "Find venues again", Description: "Search again."},
			{ID: StepCheckRio, Title: "Check Casa do Rio", Description: "Check when Casa do Rio is free for 2 days.", DependsOn: []string{StepVenues}},
			{ID: StepCheckVerde, Title: "Check Quinta Verde", Description: "Check when Quinta Verde is free for 2 days.", DependsOn: []string{StepVenues}},
			{ID: StepBudget, Title: "Compare the budgets", Description: "Estimate the cost at both venues, with catering and the activity.", DependsOn: []string{StepVenues, StepActivity}},
			{ID: StepBook, Title: "Book the better venue", Description: "Book the cheaper venue that is free, on its first free days.", DependsOn: []string{StepCheckRio, StepCheckVerde, StepBudget}},
		},
	}
}

// Script returns the scripted model that plays the scenario. Every reply
// is chosen by what the request holds (the node asking, the step, whether
// a tool result came back), so parallel steps get theirs in any order;
// every reply repeats, so a thread's next task plays the scenario again.
func Script() llm.Model {
	m := llmtest.New()
	m.When(llmtest.Node(planexec.IntentNode), llmtest.JSON(map[string]string{"intent": "task"})).Repeat()

	// The planner: the city, then the form, then the plan (the same plan
	// again after a rejection).
	m.When(answered(0), askTurn(map[string]any{"mode": planexec.AskSelect, "question": CityQuestion, "options": Cities})).Repeat()
	m.When(answered(1), askTurn(map[string]any{"mode": planexec.AskForm, "question": FormQuestion, "fields": FormFields()})).Repeat()
	m.When(answered(2), planTurn(InitialPlan())).Repeat()

	step(m, StepVenues,
		call(SearchVenues, map[string]any{"city": "Lisbon", "people": 12}),
		"Two venues hold 12 people: Casa do Rio (up to 20, €900 per day, riverside) and Quinta Verde (up to 14, €650 per day, garden estate). Both are worth checking.")
	step(m, StepActivity,
		call(ListActivities, map[string]any{"city": "Lisbon"}),
		"The cooking class: €60 per person, 3 hours, and it can be fully vegetarian.")
	m.When(llmtest.Node(planexec.ReplanNode), llmtest.JSON(RevisedPlan())).Repeat()
	step(m, StepCheckRio,
		call(CheckAvailability, map[string]any{"venue": "Casa do Rio", "days": 2}),
		"Casa do Rio is free for 2 days only from Jun 23.")
	step(m, StepCheckVerde,
		call(CheckAvailability, map[string]any{"venue": "Quinta Verde", "days": 2}),
		"Quinta Verde is free for 2 days from Jun 9 or from Jun 16.")
	step(m, StepBudget, llmtest.ToolCalls(
		llmtest.Call(EstimateBudget, args(map[string]any{"venue": "Casa do Rio", "people": 12, "days": 2, "activity": "cooking class"})),
		llmtest.Call(EstimateBudget, args(map[string]any{"venue": "Quinta Verde", "people": 12, "days": 2, "activity": "cooking class"})),
	), "Quinta Verde costs €3100 in all and Casa do Rio €3600 (venue, catering and the cooking class).")
	step(m, StepBook,
		call(BookVenue, map[string]any{"venue": "Quinta Verde", "start": "Jun 9", "days": 2, "people": 12}),
		"Booked Quinta Verde for 12 people on Jun 9 and 10: confirmation OFF-001.")
	m.When(llmtest.Node(planexec.DeliverNode), llmtest.Text(DeliveredText)).Repeat()
	return m
}

// answered matches the planner's requests that carry n answers to its
// questions (the ask calls' results).
func answered(n int) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		if r.Node != planexec.PlanNode {
			return false
		}
		got := 0
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleTool {
				got++
			}
		}
		return got == n
	}
}

// inStep matches the requests of the loop running step id: its first user
// message is the step's prompt, which names the step.
func inStep(id string) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		if r.Node != react.ModelNode || !strings.HasPrefix(r.Namespace, planexec.StepNode+":") {
			return false
		}
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleUser {
				return strings.Contains(msg.Text(), "Your step is "+id+":")
			}
		}
		return false
	}
}

// step scripts step id: first the tool calls, then, once their results
// are back, the step's answer.
func step(m *llmtest.Model, id string, calls llmtest.Turn, answer string) {
	m.When(llmtest.And(inStep(id), llmtest.Not(llmtest.LastIsToolResult())), calls).Repeat()
	m.When(llmtest.And(inStep(id), llmtest.LastIsToolResult()), llmtest.Text(answer)).Repeat()
}

func call(name string, v any) llmtest.Turn {
	return llmtest.ToolCalls(llmtest.Call(name, args(v)))
}

func askTurn(v any) llmtest.Turn {
	return llmtest.ToolCalls(llmtest.Call(planexec.AskToolName, args(v)))
}

// planTurn is the planner's reply holding p, rated moderate (so there is
// no second, deeper planning call).
func planTurn(p planexec.Plan) llmtest.Turn {
	return llmtest.JSON(map[string]any{"complexity": "moderate", "task": p.Task, "steps": p.Steps, "replan": p.Replan})
}

// args encodes a tool call's arguments; the values are fixed maps that
// always encode.
func args(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}
