package planner

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
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
	// DeliveredText is the scripted final answer when the person answers
	// Lisbon, 12 people, 2 days and vegetarian food, and approves the plan
	// (and its revision) and the booking.
	DeliveredText = "Your offsite is booked: Quinta Verde for 12 people, 2 days from Jun 9 (confirmation OFF-001), " +
		"with the cooking class. Estimated cost €3100 in all, with catering and the activity."
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
// level, the replanner swaps Availability for one check per venue found
// (CheckRio and CheckVerde in Lisbon).
const (
	StepVenues       = "venues"
	StepActivity     = "activity"
	StepAvailability = "availability"
	StepBudget       = "budget"
	StepBook         = "book"
	StepCheckRio     = "check_rio"
	StepCheckVerde   = "check_verde"
)

// Scenario is what the conversation settled: the city, the group, the
// length, the notes, whether to plan an activity, and what the person
// asked for that the scripted demo cannot do.
type Scenario struct {
	City     string
	People   int
	Days     int
	Notes    string
	Activity bool
	Unable   []string
	// Added are the steps the person asked for in a comment ("add a
	// step for the catering"); the demo has no tools for them, and their
	// steps say so.
	Added []string
}

// DefaultScenario is the scenario of the answers file: Lisbon, 12 people,
// 2 days, vegetarian food, with an activity.
func DefaultScenario() Scenario {
	return Scenario{City: "Lisbon", People: 12, Days: 2, Notes: "vegetarian food, please", Activity: true}
}

func (sc Scenario) vegetarian() bool {
	return strings.Contains(strings.ToLower(sc.Notes), "vegetarian")
}

// InitialPlan is the scripted plan for the default scenario.
func InitialPlan() planexec.Plan { return PlanFor(DefaultScenario()) }

// PlanFor is the scripted planner's plan for a scenario: venues and the
// activity in parallel, then availability and the budget, then the
// booking; venues is a replan step.
func PlanFor(sc Scenario) planexec.Plan {
	task := fmt.Sprintf("Plan and book a %d-day offsite in %s for %d people", sc.Days, sc.City, sc.People)
	suits := fmt.Sprintf("suits %d people", sc.People)
	if sc.vegetarian() {
		task += ", with vegetarian food"
		suits += " and vegetarian food"
	}
	task += "."
	if len(sc.Unable) > 0 {
		task += " (Asked for, which this scripted demo cannot do: " + strings.Join(sc.Unable, "; ") + ".)"
	}
	steps := []planexec.Step{
		{ID: StepVenues, Title: "Find venues", Description: fmt.Sprintf("Search %s for venues that hold %d people.", sc.City, sc.People), DoneWhen: "the venues that fit are listed with their day rates"},
	}
	budgetDeps := []string{StepVenues}
	budget := "Estimate the cost of the venue and catering."
	if sc.Activity {
		steps = append(steps, planexec.Step{ID: StepActivity, Title: "Pick an activity", Description: fmt.Sprintf("List %s's activities and pick one that %s.", sc.City, suits), DoneWhen: "one activity is chosen, with its price"})
		budgetDeps = append(budgetDeps, StepActivity)
		budget = "Estimate the cost of the venue, catering and the activity."
	}
	for i, a := range sc.Added {
		steps = append(steps, planexec.Step{ID: fmt.Sprintf("added%d", i+1), Title: strings.ToUpper(a[:1]) + a[1:], Description: "Asked for in your comment: " + a + ".", DependsOn: []string{StepVenues}})
	}
	steps = append(steps,
		planexec.Step{ID: StepAvailability, Title: "Check availability", Description: fmt.Sprintf("Check when the best venue is free for %d days.", sc.Days), DependsOn: []string{StepVenues}},
		planexec.Step{ID: StepBudget, Title: "Estimate the budget", Description: budget, DependsOn: budgetDeps},
		planexec.Step{ID: StepBook, Title: "Book the venue", Description: "Book the venue on its free days.", DependsOn: []string{StepAvailability, StepBudget}},
	)
	return planexec.Plan{Task: task, Steps: steps, Replan: []string{StepVenues}}
}

// Script returns the scripted model that plays the scenario. It reads
// each request — the answers to its questions, the feedback on a rejected
// plan, the plan as edited, the tool results, what the delivery is told
// did not happen — and answers consistently with it, by rules: the plan
// follows the city and the form, a step's answer follows its tool
// results (a rejected or failed booking is "Not booked", with why), and
// the summary follows the step outcomes planexec reports. Asked something
// outside the scenario, it says what it can demonstrate. Every reply
// repeats, so a thread's next task plays the scenario again.
func Script() llm.Model {
	m := llmtest.New()
	m.When(llmtest.Node(planexec.IntentNode), llmtest.Respond(intent)).Repeat()
	m.When(llmtest.Node(planexec.PlanNode), llmtest.Respond(plan)).Repeat()
	m.When(llmtest.Node(planexec.ReplanNode), llmtest.Respond(replan)).Repeat()
	m.When(inAnyStep, llmtest.Respond(stepReply)).Repeat()
	m.When(llmtest.Node(planexec.DeliverNode), llmtest.Respond(deliver)).Repeat()
	return m
}

// Scope is what the scripted model says when asked something outside its
// scenario.
const Scope = "I am the offsite planner's scripted demo model, so I can only play one scenario: " +
	"planning and booking a team offsite in Lisbon, Berlin or Prague (I ask the city and a few details, " +
	"show the plan for you to approve, edit or reject, and ask before booking). " +
	"Try: \"Organise our team offsite next month\" or \"Plan a 3-day offsite in Berlin for 8 people\"."

var inScope = regexp.MustCompile(`(?i)offsite|off-site|venue|team (event|day|trip)|retreat|book|plan|organi[sz]e|lisbon|berlin|prague|activity`)

// intent treats requests about an offsite (or no text at all: the
// sample request) as the task, and answers anything else with Scope.
func intent(r *llmtest.Request) llmtest.Turn {
	last := strings.TrimSpace(r.LastUser())
	if last == "" || inScope.MatchString(last) {
		return llmtest.JSON(map[string]string{"intent": "task"})
	}
	return llmtest.JSON(map[string]string{"intent": "chat", "reply": Scope})
}

const answeredPrefix = "The user answered: "

// plan asks the city, then the form, then gives the plan the answers and
// any feedback on earlier plans call for.
func plan(r *llmtest.Request) llmtest.Turn {
	sc, city, form := scenarioOf(r.Messages)
	switch {
	case !city:
		return askTurn(map[string]any{"mode": planexec.AskSelect, "question": CityQuestion, "options": Cities})
	case !form:
		return askTurn(map[string]any{"mode": planexec.AskForm, "question": FormQuestion, "fields": FormFields()})
	}
	p := PlanFor(sc)
	return llmtest.JSON(map[string]any{"complexity": "moderate", "task": p.Task, "steps": p.Steps, "replan": p.Replan})
}

// scenarioOf reads the planning dialogue: the city and the form answered
// (and whether they were), and every feedback on a rejected plan, in
// order, the later winning.
func scenarioOf(msgs []llm.Message) (sc Scenario, city, form bool) {
	sc = Scenario{City: "Lisbon", People: 12, Days: 2, Activity: true}
	for _, m := range msgs {
		switch {
		case m.Role == llm.RoleTool && strings.HasPrefix(m.Text(), answeredPrefix):
			ans := strings.TrimPrefix(m.Text(), answeredPrefix)
			var f struct {
				People float64 `json:"people"`
				Length string  `json:"length"`
				Notes  string  `json:"notes"`
			}
			if json.Unmarshal([]byte(ans), &f) == nil {
				form = true
				sc.People, sc.Notes = int(f.People), f.Notes
				if n, ok := leadingNumber(f.Length); ok {
					sc.Days = n
				}
				continue
			}
			if i := slices.IndexFunc(Cities, func(c string) bool { return strings.EqualFold(c, strings.TrimSpace(ans)) }); i >= 0 {
				sc.City, city = Cities[i], true
			}
		case m.Role == llm.RoleUser:
			if _, fb, ok := strings.Cut(m.Text(), "Their feedback: "); ok {
				fb, _, _ = strings.Cut(fb, "\n")
				sc = sc.follow(fb)
				continue
			}
			var knewCity, knewForm bool
			sc, knewCity, knewForm = sc.request(m.Text())
			city, form = city || knewCity, form || knewForm
		}
	}
	return sc, city, form
}

// request reads what a person's request already says, so that the
// planner does not ask it again: a city it names settles the city; a
// group size and a length it names (within the form's bounds) settle the
// form, with "vegetarian" kept as the form's notes would keep it. What it
// does not say is still asked.
func (sc Scenario) request(text string) (_ Scenario, city, form bool) {
	lower := strings.ToLower(text)
	for _, c := range Cities {
		if strings.Contains(lower, strings.ToLower(c)) {
			sc.City, city = c, true
		}
	}
	people, days := 0, 0
	if m := peopleRE.FindStringSubmatch(text); m != nil {
		people, _ = strconv.Atoi(m[1])
	}
	if m := daysRE.FindStringSubmatch(text); m != nil {
		days, _ = strconv.Atoi(m[1])
	}
	if people >= 1 && people <= MaxPeople && days >= 1 && days <= len(Lengths) {
		sc.People, sc.Days, form = people, days, true
		if strings.Contains(lower, "vegetarian") {
			sc.Notes = "vegetarian food"
		} else {
			sc.Notes = ""
		}
	}
	return sc, city, form
}

var (
	peopleRE = regexp.MustCompile(`(?i)(\d+)\s*(people|persons|guests|of us)`)
	daysRE   = regexp.MustCompile(`(?i)(\d+)[\s-]*days?`)
	skipRE   = regexp.MustCompile(`(?i)\b(skip|no|without|drop|remove|leave out|don'?t (want|need))\b[^.;]*\bactivit(y|ies)\b|\bactivit(y|ies)\b[^.;]*\b(not needed|unnecessary)\b`)
	stepRE   = regexp.MustCompile(`(?i)\badd (?:a |another )?step (?:for|to|about) ([^.;\n]+)`)
	addRE    = regexp.MustCompile(`(?i)\b(add|with|include|want)\b[^.;]*\bactivit(y|ies)\b`)
)

// follow applies a person's feedback: a city, a group size or a length
// it names, skipping or adding the activity. Anything else is recorded
// as asked for but beyond the demo, so the plan says so instead of
// pretending.
func (sc Scenario) follow(feedback string) Scenario {
	understood := false
	for _, c := range Cities {
		if strings.Contains(strings.ToLower(feedback), strings.ToLower(c)) {
			sc.City, understood = c, true
		}
	}
	if m := peopleRE.FindStringSubmatch(feedback); m != nil {
		sc.People, _ = strconv.Atoi(m[1])
		understood = true
	}
	if m := daysRE.FindStringSubmatch(feedback); m != nil {
		sc.Days, _ = strconv.Atoi(m[1])
		understood = true
	}
	if m := stepRE.FindStringSubmatch(feedback); m != nil {
		sc.Added = append(slices.Clone(sc.Added), strings.TrimSpace(m[1]))
		understood = true
	}
	switch {
	case skipRE.MatchString(feedback):
		sc.Activity, understood = false, true
	case addRE.MatchString(feedback):
		sc.Activity, understood = true, true
	}
	if !understood && strings.TrimSpace(feedback) != "" {
		sc.Unable = append(slices.Clone(sc.Unable), strings.TrimSpace(feedback))
	}
	return sc
}

func leadingNumber(s string) (int, bool) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(f[0])
	return n, err == nil
}

// inAnyStep matches the requests of a step's loop.
func inAnyStep(r *llmtest.Request) bool {
	return r.Node == react.ModelNode && strings.HasPrefix(r.Namespace, planexec.StepNode+":")
}

// inStep matches the requests of the loop running step id: its first user
// message is the step's prompt, which names the step.
func inStep(id string) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		return inAnyStep(r) && strings.Contains(firstUser(r.Messages), "Your step is "+id+":")
	}
}

func firstUser(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			return m.Text()
		}
	}
	return ""
}

func askTurn(v any) llmtest.Turn {
	return llmtest.ToolCalls(llmtest.Call(planexec.AskToolName, args(v)))
}

// args encodes a tool call's arguments; the values are maps and structs
// of plain values that always encode.
func args(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}
