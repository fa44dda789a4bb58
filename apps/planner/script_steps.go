package planner

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

var (
	taskRE    = regexp.MustCompile(`a (\d+)-day offsite in (\w+) for (\d+) people`)
	stepIDRE  = regexp.MustCompile(`Your step is ([^:\s]+): (.*)`)
	venueRE   = regexp.MustCompile(`(?m)^- ([^:\n]+): up to (\d+) people`)
	freeRE    = regexp.MustCompile(`(?m)^(.+?) is free for (\d+) days from (.+?)\.$`)
	costRE    = regexp.MustCompile(`(?m)^(.+?): €(\d+) in all`)
	chosenRE  = regexp.MustCompile(`(?m)^The ([^:\n]+): €(\d+) per person`)
	checkRE   = regexp.MustCompile(`Check when (.+?) is free`)
	activRE   = regexp.MustCompile(`(?m)^- ([^:\n]+): €(\d+) per person, ([^(\n]+?) \(([^)\n]*)\)`)
	bookedRE  = regexp.MustCompile(`Booked (.+?) for (\d+) people, (\d+) days from (.+?)\. Confirmation (\S+?)\.`)
	finishRE  = regexp.MustCompile(`(?m)^\[([^\]]+)\] .* \((done|failed|skipped)\):$`)
	planAtRE  = regexp.MustCompile(`The (?:current|revised) plan:\n(.*)\n`)
	noBookRE  = regexp.MustCompile(`(?i)\b(don'?t|do not|no|skip|without)\b[^.;]*\bbook`)
	numberRun = []string{"No", "One", "Two", "Three", "Four", "Five", "Six", "Seven"}
)

// taskScenario reads the city, the group and the length back from the
// plan's task, which PlanFor wrote (a step sees the plan, not the
// conversation).
func taskScenario(text string) Scenario {
	sc := DefaultScenario()
	sc.Notes = ""
	if m := taskRE.FindStringSubmatch(text); m != nil {
		sc.Days, _ = strconv.Atoi(m[1])
		sc.City = m[2]
		sc.People, _ = strconv.Atoi(m[3])
	}
	if task, _, _ := strings.Cut(text, "\n"); strings.Contains(task, "vegetarian") {
		sc.Notes = "vegetarian food"
	}
	return sc
}

// stepReply plays one step: its tool calls first, then, once their
// results are back, an answer that says what the results say.
func stepReply(r *llmtest.Request) llmtest.Turn {
	prompt := firstUser(r.Messages)
	sc := taskScenario(prompt)
	m := stepIDRE.FindStringSubmatch(prompt)
	if m == nil {
		return llmtest.Text("I could not tell which step this is, so I did nothing.")
	}
	id, title := m[1], strings.TrimSpace(m[2])
	results := toolResults(r.Messages)
	if len(results) == 0 {
		return stepCalls(id, title, prompt, sc)
	}
	return llmtest.Text(stepAnswer(id, sc, results))
}

// stepCalls are a step's tool calls, by the step's ID; a step the demo
// has no tool for (one a person added) says so and does nothing.
func stepCalls(id, title, prompt string, sc Scenario) llmtest.Turn {
	var calls []llm.ToolCall
	venues := venueRE.FindAllStringSubmatch(prompt, -1)
	switch {
	case id == StepVenues:
		calls = append(calls, llmtest.Call(SearchVenues, args(map[string]any{"city": sc.City, "people": sc.People})))
	case id == StepActivity:
		calls = append(calls, llmtest.Call(ListActivities, args(map[string]any{"city": sc.City})))
	case id == StepAvailability:
		for _, v := range venues {
			calls = append(calls, llmtest.Call(CheckAvailability, args(map[string]any{"venue": v[1], "days": sc.Days})))
		}
	case strings.HasPrefix(id, "check_"):
		if c := checkRE.FindStringSubmatch(prompt); c != nil {
			calls = append(calls, llmtest.Call(CheckAvailability, args(map[string]any{"venue": c[1], "days": sc.Days})))
		}
	case id == StepBudget:
		act := ""
		if a := chosenRE.FindStringSubmatch(prompt); a != nil {
			act = a[1]
		}
		for _, v := range venues {
			calls = append(calls, llmtest.Call(EstimateBudget, args(map[string]any{"venue": v[1], "people": sc.People, "days": sc.Days, "activity": act})))
		}
	case id == StepBook:
		venue, start, ok := bestVenue(prompt)
		if !ok {
			return llmtest.Text(fmt.Sprintf("Not booked: no venue found is free for %d days in a row, so there was nothing to book.", sc.Days))
		}
		calls = append(calls, llmtest.Call(BookVenue, args(map[string]any{"venue": venue, "start": start, "days": sc.Days, "people": sc.People})))
	default:
		return llmtest.Text(fmt.Sprintf("Not done: this scripted demo has no tool for %q, so nothing was done for this step.", title))
	}
	if len(calls) == 0 {
		return llmtest.Text("Nothing to do: the steps this one depends on found no venue.")
	}
	return llmtest.ToolCalls(calls...)
}

// bestVenue picks, from the results a step was given, the cheapest venue
// that is free (the first free one when no cost is known), and its first
// free day.
func bestVenue(prompt string) (venue, start string, ok bool) {
	cost := map[string]int{}
	for _, c := range costRE.FindAllStringSubmatch(prompt, -1) {
		cost[c[1]], _ = strconv.Atoi(c[2])
	}
	best := -1
	for _, f := range freeRE.FindAllStringSubmatch(prompt, -1) {
		c, known := cost[f[1]]
		if !known {
			c = 1 << 30
		}
		if !ok || c < best {
			first, _, _ := strings.Cut(f[3], " or from ")
			venue, start, best, ok = f[1], first, c, true
		}
	}
	return venue, start, ok
}

type toolResult struct {
	call  llm.ToolCall
	text  string
	error bool
}

// toolResults pairs the step's tool results with their calls.
func toolResults(msgs []llm.Message) []toolResult {
	calls := map[string]llm.ToolCall{}
	var out []toolResult
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
		if m.Role == llm.RoleTool {
			out = append(out, toolResult{call: calls[m.ToolCallID], text: strings.TrimSpace(m.Text()), error: m.IsError})
		}
	}
	return out
}

// stepAnswer says what a step's tool results say.
func stepAnswer(id string, sc Scenario, results []toolResult) string {
	var lines []string
	for _, r := range results {
		if r.error {
			if id == StepBook {
				return notBooked(r)
			}
			lines = append(lines, fmt.Sprintf("%s failed: %s", r.call.Name, firstLine(r.text)))
			continue
		}
		switch id {
		case StepVenues:
			n := len(venueRE.FindAllString(r.text, -1))
			if n == 0 {
				lines = append(lines, r.text)
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %s hold %d people in %s:\n%s", numberWord(n), plural(n, "venue", "venues"), sc.People, sc.City, r.text))
		case StepActivity:
			lines = append(lines, pickActivity(r.text, sc))
		case StepBook:
			if b := bookedRE.FindStringSubmatch(r.text); b != nil {
				lines = append(lines, fmt.Sprintf("Booked %s for %s people, %s days from %s: confirmation %s.", b[1], b[2], b[3], b[4], b[5]))
				continue
			}
			lines = append(lines, r.text)
		default:
			lines = append(lines, r.text)
		}
	}
	return strings.Join(lines, "\n")
}

// notBooked is the booking step's answer when the booking did not
// happen: turned down by the person (with their reason) or refused.
func notBooked(r toolResult) string {
	var a struct {
		Venue string `json:"venue"`
	}
	_ = json.Unmarshal([]byte(r.call.Arguments), &a)
	venue := cmpOr(a.Venue, "the venue")
	if _, reason, ok := strings.Cut(r.text, "Their message: "); ok {
		return fmt.Sprintf("Not booked: you turned down booking %s (%s).", venue, strings.TrimSpace(reason))
	}
	if strings.Contains(r.text, "rejected this call") {
		return fmt.Sprintf("Not booked: you turned down booking %s.", venue)
	}
	return fmt.Sprintf("Not booked: booking %s failed: %s", venue, firstLine(r.text))
}

// pickActivity chooses the cooking class for a vegetarian group when
// there is one, else the first activity listed.
func pickActivity(list string, sc Scenario) string {
	acts := activRE.FindAllStringSubmatch(list, -1)
	if len(acts) == 0 {
		return list
	}
	pick := acts[0]
	for _, a := range acts {
		if sc.vegetarian() && strings.Contains(a[4], "vegetarian") {
			pick = a
		}
	}
	return fmt.Sprintf("The %s: €%s per person, %s (%s).", pick[1], pick[2], strings.TrimSpace(pick[3]), pick[4])
}

// replan revises the steps still to do once the venues are known: one
// availability check per venue found instead of the single availability
// step, the budget and booking after them. The rest of the plan — steps
// and dependencies a person edited included — is kept as it is. Feedback
// on a rejected revision that names venues checks only those; one that
// says not to book drops the booking.
func replan(r *llmtest.Request) llmtest.Turn {
	report := r.LastUser()
	var current planexec.Plan
	if m := planAtRE.FindStringSubmatch(report); m != nil {
		_ = json.Unmarshal([]byte(m[1]), &current)
	}
	finished := map[string]bool{}
	for _, m := range finishRE.FindAllStringSubmatch(report, -1) {
		finished[m[1]] = true
	}
	_, feedback, _ := strings.Cut(report, "Their feedback: ")
	feedback, _, _ = strings.Cut(feedback, "\n")
	var venues []string
	for _, v := range venueRE.FindAllStringSubmatch(report, -1) {
		if !slices.Contains(venues, v[1]) {
			venues = append(venues, v[1])
		}
	}
	if named := namedVenues(venues, feedback); len(named) > 0 {
		venues = named
	}
	sc := taskScenario(current.Task)
	var checks []string
	var steps []planexec.Step
	for _, st := range current.Steps {
		switch {
		case finished[st.ID]:
			continue
		case st.ID == StepAvailability || strings.HasPrefix(st.ID, "check_"):
			if slices.Contains(checks, "*") {
				continue
			}
			checks = append(checks, "*")
			for _, v := range venues {
				id := "check_" + strings.ToLower(v[strings.LastIndex(v, " ")+1:])
				checks = append(checks, id)
				steps = append(steps, planexec.Step{ID: id, Title: "Check " + v, Description: fmt.Sprintf("Check when %s is free for %d days.", v, sc.Days), DependsOn: []string{StepVenues}})
			}
			continue
		case st.ID == StepBook && noBookRE.MatchString(feedback):
			continue
		}
		steps = append(steps, st)
	}
	swapped := slices.Contains(checks, "*") && slices.ContainsFunc(current.Steps, func(st planexec.Step) bool {
		return st.ID == StepAvailability && !finished[st.ID]
	})
	checks = slices.DeleteFunc(checks, func(s string) bool { return s == "*" })
	for i, st := range steps {
		if strings.HasPrefix(st.ID, "check_") {
			continue
		}
		var deps []string
		replaced := false
		for _, d := range st.DependsOn {
			if d == StepAvailability || strings.HasPrefix(d, "check_") {
				if !replaced {
					deps = append(deps, checks...)
					replaced = true
				}
				continue
			}
			deps = append(deps, d)
		}
		if replaced {
			steps[i].DependsOn = deps
		}
		switch {
		case !swapped:
		case st.ID == StepBudget && st.Title == "Estimate the budget":
			steps[i].Title = "Compare the budgets"
			steps[i].Description = strings.Replace(st.Description, "of the venue", "at each venue found", 1)
		case st.ID == StepBook && st.Title == "Book the venue":
			steps[i].Title, steps[i].Description = "Book the better venue", "Book the cheaper venue that is free, on its first free days."
		}
	}
	return llmtest.JSON(planexec.Plan{Task: current.Task, Steps: steps})
}

// namedVenues are the venues a feedback names.
func namedVenues(venues []string, feedback string) []string {
	var out []string
	for _, v := range venues {
		if strings.Contains(strings.ToLower(feedback), strings.ToLower(v)) {
			out = append(out, v)
		}
	}
	return out
}

func numberWord(n int) string {
	if n >= 0 && n < len(numberRun) {
		return numberRun[n]
	}
	return strconv.Itoa(n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
