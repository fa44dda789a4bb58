package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// ScriptedForm is the form the scripted planner asks the person to fill.
var ScriptedForm = map[string]any{
	"mode":     "form",
	"question": "A few details so the plan fits you:",
	"fields": []map[string]any{
		{"key": "max_slots", "label": "Most study slots per day", "type": "number", "required": true, "min": 1, "max": 8},
		{"key": "first", "label": "Subject to schedule first", "type": "select", "required": true, "options": []string{"math", "cs", "physics", "history"}},
		{"key": "friday_free", "label": "Keep Friday free", "type": "boolean"},
	},
}

// formAnswer is what the person put in the scripted form.
type formAnswer struct {
	MaxSlots   float64 `json:"max_slots"`
	First      string  `json:"first"`
	FridayFree *bool   `json:"friday_free"`
}

// scriptedPlan is the scripted scenario's plan for the form's answers:
// two read steps in parallel, the writes in parallel, then a check. The
// answers shape it: a day limit under 3 slots leaves the 3-slot
// assignment out, and unless Friday is kept free the physics problem set
// goes on Friday afternoon.
func scriptedPlan(a formAnswer) map[string]any {
	first := a.First
	if first == "" {
		first = "math"
	}
	steps := []planexec.Step{
		{ID: "s1", Title: "Look at the week", Description: "Get the overview and the free runs of 2 slots."},
		{ID: "s2", Title: "Review the pending tasks", Description: "List the pending tasks with their durations."},
		{ID: "s3", Title: "Place the algebra quiz review", Description: "Place task #20 in a free 2-slot run early in the week.", DependsOn: []string{"s1", "s2"}},
	}
	check := []string{"s3", "s4"}
	if a.MaxSlots >= 3 {
		steps = append(steps, planexec.Step{ID: "s4", Title: "Place the assignment and the essay outline", Description: "Place task #21 (3 slots) and embed task #23 in a study hall.", DependsOn: []string{"s1", "s2"}})
	} else {
		steps = append(steps, planexec.Step{ID: "s4", Title: "Place the essay outline", Description: fmt.Sprintf("Embed task #23 in a study hall; leave #21 (3 slots) pending, over the limit of %v slots a day.", a.MaxSlots), DependsOn: []string{"s1", "s2"}})
	}
	if a.FridayFree == nil || !*a.FridayFree {
		steps = append(steps, planexec.Step{ID: "s6", Title: "Place the physics problem set", Description: "Place task #22 on Friday afternoon, slots 5-6.", DependsOn: []string{"s1", "s2"}})
		check = append(check, "s6")
	}
	steps = append(steps, planexec.Step{ID: "s5", Title: "Check the result", Description: "Confirm that nothing conflicts and list what is still pending.", DependsOn: check})
	return map[string]any{
		"complexity": "simple",
		"task":       "Place the pending study tasks into free time this week, starting with " + first,
		"steps":      steps,
	}
}

// Script returns the scripted model for the demo: a form question, a plan
// shaped by the form's answers, reads, the writes the plan calls for, and
// a delivery. Each reply is chosen by what the request holds — which node
// or step asks, the form's answers, the tool results so far — never by how
// many requests came before, so any number of threads, and a thread
// resumed in a new process, get the same replies. The replies after a
// write report what the tool results say (placed, or turned down), and
// the delivery is built from the step results, so the summary always
// agrees with the schedule.
func Script() llm.Model {
	m := llmtest.New()
	after := llmtest.LastIsToolResult()
	m.When(llmtest.Node(planexec.IntentNode), llmtest.Respond(func(r *llmtest.Request) llmtest.Turn {
		if last := strings.TrimSpace(r.LastUser()); last != "" && !inScope.MatchString(last) {
			return llmtest.JSON(map[string]string{"intent": "chat", "reply": Scope})
		}
		return llmtest.JSON(map[string]string{"intent": "task"})
	})).Repeat()
	m.When(llmtest.Node(planexec.PlanNode), llmtest.ToolCalls(llmtest.Call(planexec.AskToolName, mustJSON(ScriptedForm)))).Repeat()
	step := func(id, answer string, calls ...llm.ToolCall) {
		is := llmtest.LastUserContains("Your step is " + id + ":")
		if answer != "" {
			m.When(llmtest.And(is, after), llmtest.Text(answer)).Repeat()
		}
		m.When(is, llmtest.ToolCalls(calls...)).Repeat()
	}
	step("s1", "Tuesday has slots 1-2 free, Thursday 3-8 and Friday 5-8; the Wednesday study hall accepts embedded tasks.",
		llmtest.Call("get_overview", `{}`), llmtest.Call("find_free", `{"duration":2}`))
	step("s2", "Pending: #20 algebra quiz review (2 slots), #21 programming assignment (3), #22 physics problem set (2), #23 essay outline (1).",
		llmtest.Call("list_tasks", `{"status":"pending"}`))
	step("s3", "", llmtest.Call("place", `{"id":20,"day":2,"start":1}`))
	m.When(llmtest.And(llmtest.LastUserContains("Your step is s4:"), llmtest.LastUserContains("leave #21")),
		llmtest.ToolCalls(llmtest.Call("place", `{"id":23,"day":3,"start":5}`))).Repeat()
	step("s4", "", llmtest.Call("place", `{"id":21,"day":4,"start":3}`), llmtest.Call("place", `{"id":23,"day":3,"start":5}`))
	step("s6", "", llmtest.Call("place", `{"id":22,"day":5,"start":5}`))
	step("s5", "", llmtest.Call("list_tasks", `{"status":"pending"}`))
	return &scripted{rules: m}
}

// Scope is what the scripted model says when asked something outside its
// scenario.
const Scope = "I am the study scheduler's scripted demo model, so I can only play one scenario: " +
	"fitting a student's pending study tasks into the free slots of this week (a form about your limits, " +
	"a plan to approve, and each change to the schedule to approve or turn down). " +
	"I cannot book meetings or answer other questions; a real model can (--model, or OPENAI_API_KEY). " +
	"Try: \"" + Request + "\""

var inScope = regexp.MustCompile(`(?i)stud(y|ies)|week|schedul|homework|task|slot|exam|quiz|assignment|essay|revis|subject|class|plan`)

// scripted answers the requests whose reply depends on their content (the
// plan after the form, a step's result after its tool results, the
// delivery) by building that reply, and every other request from rules.
type scripted struct{ rules *llmtest.Model }

func (s *scripted) Name() string { return s.rules.Name() }

func (s *scripted) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if t, ok := s.reply(req); ok {
		return llmtest.New(llmtest.WithName(s.Name()), llmtest.WithChunkSize(8)).Reply(t).Generate(ctx, req)
	}
	return s.rules.Generate(ctx, req)
}

func (s *scripted) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	if t, ok := s.reply(req); ok {
		return llmtest.New(llmtest.WithName(s.Name()), llmtest.WithChunkSize(8)).Reply(t).Stream(ctx, req)
	}
	return s.rules.Stream(ctx, req)
}

var stepRE = regexp.MustCompile(`Your step is (s\d+):`)

// reply builds the content-dependent replies; ok is false for the rest.
func (s *scripted) reply(req *llm.Request) (llmtest.Turn, bool) {
	msgs := req.Messages
	if len(msgs) == 0 {
		return llmtest.Turn{}, false
	}
	last := msgs[len(msgs)-1]
	// The plan, once the form is answered.
	if last.Role == llm.RoleTool && strings.HasPrefix(last.Text(), "The user answered: ") {
		var a formAnswer
		if err := json.Unmarshal([]byte(strings.TrimPrefix(last.Text(), "The user answered: ")), &a); err == nil {
			return llmtest.JSON(scriptedPlan(a)), true
		}
	}
	// The delivery: the step results, as they are.
	if strings.HasPrefix(systemText(msgs), "The plan has run.") {
		// Paced, so the demo shows the answer streaming as a model's would.
		return llmtest.Text(delivery(lastUser(msgs))).Paced(4 * time.Millisecond), true
	}
	// A write step's or the check's result, from its tool results.
	m := stepRE.FindStringSubmatch(lastUser(msgs))
	if m == nil || last.Role != llm.RoleTool {
		return llmtest.Turn{}, false
	}
	switch m[1] {
	case "s3", "s4", "s6":
		return llmtest.Text(writeResult(msgs)), true
	case "s5":
		return llmtest.Text(checkResult(last.Text())), true
	}
	return llmtest.Turn{}, false
}

func systemText(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role == llm.RoleSystem {
			return m.Text()
		}
	}
	return ""
}

func lastUser(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

var placedRE = regexp.MustCompile(`placed "([^"]+)" \(#(\d+)\) at ([^.;(]+)`)

// writeResult reports each place call of the step: placed where the tool
// says, or turned down with the student's reason.
func writeResult(msgs []llm.Message) string {
	args := map[string]string{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			var a struct {
				ID int `json:"id"`
			}
			if json.Unmarshal([]byte(c.Arguments), &a) == nil {
				args[c.ID] = fmt.Sprintf("#%d", a.ID)
			}
		}
	}
	var lines []string
	for _, m := range msgs {
		if m.Role != llm.RoleTool {
			continue
		}
		text := m.Text()
		if p := placedRE.FindStringSubmatch(text); p != nil {
			lines = append(lines, fmt.Sprintf("Placed %s (#%s) at %s.", p[1], p[2], strings.TrimSpace(p[3])))
			continue
		}
		item := args[m.ToolCallID]
		if _, reason, ok := strings.Cut(text, "Their message: "); ok {
			lines = append(lines, fmt.Sprintf("Not placed %s: the student turned it down (%s).", item, strings.TrimSpace(reason)))
		} else {
			lines = append(lines, fmt.Sprintf("Not placed %s: %s", item, firstLineOf(text)))
		}
	}
	return strings.Join(lines, "\n")
}

var pendingRE = regexp.MustCompile(`^- #(\d+) "([^"]+)": task, (\d+) slots?, pending`)

// checkResult reads the pending list the check step got.
func checkResult(pending string) string {
	var items []string
	for line := range strings.Lines(pending) {
		line = strings.TrimSpace(line)
		if p := pendingRE.FindStringSubmatch(line); p != nil {
			items = append(items, fmt.Sprintf("#%s %s (%s slots)", p[1], p[2], p[3]))
		} else if strings.HasPrefix(line, "- #") {
			items = append(items, strings.TrimPrefix(line, "- "))
		}
	}
	if len(items) == 0 {
		return "No conflicts. Nothing is pending."
	}
	return "No conflicts. Still pending: " + strings.Join(items, "; ") + "."
}

// delivery summarises the step results the deliver request lists.
func delivery(results string) string {
	var b strings.Builder
	b.WriteString("Your week:\n")
	friday := true
	for line := range strings.Lines(results) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Placed "), strings.HasPrefix(line, "Not placed "):
			b.WriteString("- " + line + "\n")
			if strings.Contains(line, "#22") {
				friday = false
			}
		case strings.HasPrefix(line, "No conflicts."):
			b.WriteString(line + "\n")
		}
	}
	if friday {
		b.WriteString("Friday stays free, as you asked.\n")
	}
	return strings.TrimSpace(b.String())
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the scenario's own literals
	}
	return string(b)
}
