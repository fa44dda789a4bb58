package planner

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/llm/llmtest"
)

var (
	blockRE    = regexp.MustCompile(`(?m)^\[([^\]]+)\] (.+): (done|failed|skipped|not run)$`)
	bookLineRE = regexp.MustCompile(`Booked (.+?) for (\d+) people, (\d+) days from (.+?): confirmation (\S+?)\.`)
	rejectedRE = regexp.MustCompile(`^- ` + BookVenue + ` (\{.*\}) was rejected by the person(?:, who said: "(.*)")?`)
	failedRE   = regexp.MustCompile(`^- ` + BookVenue + ` (\{.*\}) failed: (.*)`)
	unableRE   = regexp.MustCompile(`\(Asked for, which this scripted demo cannot do: (.+?)\.\)`)
)

// reported is one step of the delivery's report, as planexec wrote it.
type reported struct {
	id, title, status, body string
	undone                  []string // the "did NOT happen" lines
}

// parseReport reads the delivery's report into its steps.
func parseReport(report string) map[string]reported {
	out := map[string]reported{}
	idx := blockRE.FindAllStringSubmatchIndex(report, -1)
	for i, m := range idx {
		end := len(report)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		body := report[m[1]:end]
		r := reported{id: report[m[2]:m[3]], title: report[m[4]:m[5]], status: report[m[6]:m[7]]}
		var keep []string
		inUndone := false
		for line := range strings.Lines(body) {
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "What this step tried that did NOT happen:"):
				inUndone = true
			case inUndone && strings.HasPrefix(line, "- "):
				r.undone = append(r.undone, line)
			case inUndone:
				inUndone = false
			case strings.HasPrefix(line, "Actions that a person rejected"):
			default:
				keep = append(keep, line)
			}
		}
		r.body = strings.TrimSpace(strings.Join(keep, "\n"))
		out[r.id] = r
	}
	return out
}

// deliver writes the summary from what planexec reports of the steps: a
// booking only when the booking step is done and nothing it tried was
// rejected or failed; otherwise why nothing was booked, with the
// person's reason.
func deliver(r *llmtest.Request) llmtest.Turn {
	report := r.LastUser()
	steps := parseReport(report)
	var b strings.Builder
	b.WriteString(bookingSentence(steps))
	for _, id := range orderOf(report) {
		st := steps[id]
		if id == StepBook || st.status == "done" && !strings.HasPrefix(st.body, "Not done:") {
			continue
		}
		fmt.Fprintf(&b, "\nNot done: %s (%s)", st.title, cmpOr(firstLine(strings.TrimPrefix(st.body, "Not done: ")), st.status))
	}
	if m := unableRE.FindStringSubmatch(report); m != nil {
		fmt.Fprintf(&b, "\nYou also asked for: %s — this scripted demo cannot do that, so the plan leaves it out.", m[1])
	}
	return llmtest.Text(b.String())
}

// orderOf lists the step IDs in the report's order.
func orderOf(report string) []string {
	var ids []string
	for _, m := range blockRE.FindAllStringSubmatch(report, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// bookingSentence says whether the offsite was booked, from the booking
// step's outcome.
func bookingSentence(steps map[string]reported) string {
	book, ok := steps[StepBook]
	venueOf := func(raw string) string {
		var a struct {
			Venue  string `json:"venue"`
			Start  string `json:"start"`
			Days   int    `json:"days"`
			People int    `json:"people"`
		}
		if json.Unmarshal([]byte(raw), &a) != nil {
			return "the venue"
		}
		return fmt.Sprintf("%s for %d people, %d %s from %s", a.Venue, a.People, a.Days, plural(a.Days, "day", "days"), a.Start)
	}
	for _, line := range book.undone {
		if m := rejectedRE.FindStringSubmatch(line); m != nil {
			if m[2] == "" {
				return fmt.Sprintf("Nothing was booked: you rejected booking %s (you gave no reason).", venueOf(m[1]))
			}
			return fmt.Sprintf("Nothing was booked: you rejected booking %s, saying: %q.", venueOf(m[1]), m[2])
		}
		if m := failedRE.FindStringSubmatch(line); m != nil {
			return fmt.Sprintf("Nothing was booked: booking %s failed: %s", venueOf(m[1]), m[2])
		}
	}
	switch {
	case !ok:
		return "Nothing was booked: the plan has no booking step."
	case book.status == "not run":
		return "Nothing was booked: the booking step did not run."
	case book.status != "done":
		return fmt.Sprintf("Nothing was booked: the booking step %s (%s).", book.status, firstLine(book.body))
	case len(book.undone) > 0:
		return "Nothing was booked: " + strings.TrimPrefix(book.undone[0], "- ") + "."
	}
	m := bookLineRE.FindStringSubmatch(book.body)
	if m == nil {
		return "Nothing was booked: " + strings.TrimPrefix(firstLine(book.body), "Not booked: ")
	}
	text := fmt.Sprintf("Your offsite is booked: %s for %s people, %s %s from %s (confirmation %s)", m[1], m[2], m[3], plural(atoi(m[3]), "day", "days"), m[4], m[5])
	act := false
	if a, ok := steps[StepActivity]; ok && a.status == "done" {
		if c := chosenRE.FindStringSubmatch(a.body); c != nil {
			text += ", with the " + c[1]
			act = true
		}
	}
	text += "."
	if budget, ok := steps[StepBudget]; ok {
		for _, c := range costRE.FindAllStringSubmatch(budget.body, -1) {
			if c[1] == m[1] {
				with := "catering"
				if act {
					with += " and the activity"
				}
				text += fmt.Sprintf(" Estimated cost €%s in all, with %s.", c[2], with)
			}
		}
	}
	return text
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
