package planner

import (
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/tool"
)

// plannedTask drives request to its end, answering any city question
// with city and any form with form, and returns the first plan's task.
func plannedTask(t *testing.T, request, city string, form map[string]any) string {
	t.Helper()
	d := newDrive(t)
	d.run(request, city, form, approveAll, func(tool.ApprovalRequest) tool.Decision { return tool.Approve() })
	if len(d.plans) == 0 {
		t.Fatal("no plan was reviewed")
	}
	return d.plans[0].Plan.Task
}

// What the request already says is not asked again: a request naming
// Berlin, 8 people, 2 days and vegetarian food goes straight to the plan,
// and the driver's answers (Prague, 3 people, 1 day), which would win if
// the planner asked, never show.
func TestRequestDetailsAreNotAskedAgain(t *testing.T) {
	task := plannedTask(t, "Plan a 2-day team offsite in Berlin for 8 people, vegetarian food", "Prague",
		map[string]any{"people": 3, "length": "1 day"})
	if !strings.Contains(task, "2-day offsite in Berlin for 8 people") || !strings.Contains(task, "vegetarian") {
		t.Errorf("the plan's task is %q", task)
	}
}

// A request naming only the city settles the city; the form (group size,
// length) is still asked and its answer is what is planned.
func TestRequestCityStillAsksTheForm(t *testing.T) {
	task := plannedTask(t, "Organise our team offsite in Berlin next month", "Prague",
		map[string]any{"people": 5, "length": "1 day"})
	if !strings.Contains(task, "1-day offsite in Berlin for 5 people") {
		t.Errorf("the plan's task is %q", task)
	}
}
