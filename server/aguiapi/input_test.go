package aguiapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/db"
)

// systemText is the text of a request's system messages.
func systemText(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == llm.RoleSystem {
			b.WriteString(m.Text())
			b.WriteString("\n")
		}
	}
	return b.String()
}

// The input's context reaches the agent's model as a system note for that
// run only; forwardedProps.configurable becomes the run's
// config.configurable.
func TestContextAndForwardedProps(t *testing.T) {
	e := newEnv(t, 0)
	in := RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "hi")},
		Context:        []ContextEntry{{Description: "the page the user is on", Value: "/invoices/42"}, {Description: "timezone", Value: "Europe/Lisbon"}},
		ForwardedProps: json.RawMessage(`{"configurable":{"tone":"brief"},"copilotkit":{"x":1}}`)}
	evs := e.run("helper-a", in)
	if last := evs[len(evs)-1]; last.Type != RunFinished || last.Outcome.Type != "success" {
		t.Fatalf("last event %+v", last)
	}
	sys := systemText(e.helper.LastRequest().Messages)
	for _, want := range []string{"the page the user is on: /invoices/42", "timezone: Europe/Lisbon"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the model's system messages %q lack %q", sys, want)
		}
	}
	runsOf, err := e.db.ListRuns(context.Background(), DefaultTenant, "t1", db.RunQuery{Limit: 10})
	if err != nil || len(runsOf) != 1 {
		t.Fatalf("runs %v %v", runsOf, err)
	}
	var kw struct {
		Config struct {
			Configurable map[string]any `json:"configurable"`
		} `json:"config"`
	}
	if err := json.Unmarshal(runsOf[0].Kwargs, &kw); err != nil || kw.Config.Configurable["tone"] != "brief" {
		t.Errorf("run kwargs %s: want config.configurable.tone = brief (%v)", runsOf[0].Kwargs, err)
	}
	// The next run without context: the note is gone (per run, not state).
	e.run("helper-a", RunAgentInput{ThreadID: "t1", RunID: "r2", Messages: []Message{user("m1", "hi"), {ID: "a1", Role: "assistant", Content: json.RawMessage(`"` + HelperFirst + `"`)}, user("m2", "again")}})
	if sys := systemText(e.helper.LastRequest().Messages); strings.Contains(sys, "invoices") {
		t.Errorf("a run without context still sees the last run's: %q", sys)
	}
}

// forwardedProps.command.resume answers the one interrupt the thread
// waits on, as the LangGraph AG-UI integration sends it.
func TestForwardedResume(t *testing.T) {
	e := newEnv(t, 0)
	evs := e.run("planner-a", RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "Organise our offsite")}})
	first := evs[len(evs)-1].Outcome
	if first == nil || first.Type != "interrupt" {
		t.Fatalf("outcome %+v; want an interrupt", first)
	}
	evs = e.run("planner-a", RunAgentInput{ThreadID: "t1", RunID: "r2", Messages: []Message{user("m1", "Organise our offsite")},
		ForwardedProps: json.RawMessage(`{"command":{"resume":"Lisbon"}}`)})
	next := evs[len(evs)-1].Outcome
	if next == nil || next.Type != "interrupt" || next.Interrupts[0].ID == first.Interrupts[0].ID {
		t.Fatalf("after command.resume: %+v; want the planner's next question", next)
	}
}

// Refusals of context and forwardedProps name the field.
func TestForwardedPropsErrors(t *testing.T) {
	e := newEnv(t, 0)
	base := func() RunAgentInput {
		return RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "hi")}}
	}
	many := make([]ContextEntry, 65)
	for i := range many {
		many[i] = ContextEntry{Description: "d", Value: "v"}
	}
	cases := []struct {
		name   string
		in     func(*RunAgentInput)
		status int
		want   string
	}{
		{"not an object", func(in *RunAgentInput) { in.ForwardedProps = json.RawMessage(`[1]`) }, 422, "/forwardedProps"},
		{"configurable not an object", func(in *RunAgentInput) { in.ForwardedProps = json.RawMessage(`{"configurable":"x"}`) }, 422, "configurable must be a JSON object"},
		{"command goto", func(in *RunAgentInput) { in.ForwardedProps = json.RawMessage(`{"command":{"goto":"x"}}`) }, 422, "command.goto is not supported"},
		{"resume twice", func(in *RunAgentInput) {
			in.ForwardedProps = json.RawMessage(`{"command":{"resume":1}}`)
			in.Resume = []ResumeEntry{{InterruptID: "i", Status: "resolved", Payload: json.RawMessage(`1`)}}
		}, 422, "both resume entries"},
		{"resume when not waiting", func(in *RunAgentInput) { in.ForwardedProps = json.RawMessage(`{"command":{"resume":1}}`) }, 409, "waits for no person"},
		{"empty context entry", func(in *RunAgentInput) { in.Context = []ContextEntry{{}} }, 422, "/context"},
		{"too much context", func(in *RunAgentInput) { in.Context = many }, 422, "at most 64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.in(&in)
			st, b := e.post("chat-a", in)
			if st != c.status || !strings.Contains(string(b), c.want) {
				t.Errorf("%d %s; want %d containing %q", st, b, c.status, c.want)
			}
		})
	}
}

// A run cancelled while it streams ends with RUN_FINISHED's cancelled
// outcome (not RUN_ERROR, no interrupts), after the open text message and
// step are closed, as @ag-ui/client requires.
func TestCancelledRun(t *testing.T) {
	e := newEnv(t, 0)
	done := make(chan []Event, 1)
	go func() {
		done <- e.run("slow-a", RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", "hi")}})
	}()
	<-e.slowStarted
	runsOf, err := e.db.ListRuns(context.Background(), DefaultTenant, "t1", db.RunQuery{Limit: 10})
	if err != nil || len(runsOf) != 1 {
		t.Fatalf("runs %v %v", runsOf, err)
	}
	if !e.h.Runs.Cancel(runsOf[0].ID, "interrupt") {
		t.Fatal("the run was not running in this process")
	}
	evs := <-done
	var types []string
	open := map[string]int{}
	for _, ev := range evs {
		types = append(types, ev.Type)
		switch ev.Type {
		case TextMessageStart, StepStarted:
			open[ev.MessageID+ev.StepName]++
		case TextMessageEnd, StepFinished:
			open[ev.MessageID+ev.StepName]--
		case RunError:
			t.Errorf("RUN_ERROR %+v for a cancelled run", ev)
		}
	}
	for k, n := range open {
		if n != 0 {
			t.Errorf("%q left open (%d) in %v", k, n, types)
		}
	}
	if types[0] != RunStarted || !strings.Contains(strings.Join(types, " "), TextMessageContent) {
		t.Errorf("events %v: want RUN_STARTED first and the streamed text", types)
	}
	last := evs[len(evs)-1]
	if last.Type != RunFinished || last.Outcome == nil || last.Outcome.Type != "cancelled" || len(last.Outcome.Interrupts) != 0 || last.RunID != "r1" {
		t.Fatalf("last event %+v; want RUN_FINISHED with the cancelled outcome", last)
	}
	// The next input is an ordinary new run, not a resume.
	if st, b := e.post("chat-a", RunAgentInput{ThreadID: "t1", RunID: "r2", Messages: []Message{user("m1", "hi"), user("m2", "again")}}); st != http.StatusOK {
		t.Errorf("a new input after the cancel: %d %s", st, b)
	}
}
