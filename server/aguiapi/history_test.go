package aguiapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/planner"
)

// Each answer the person gives reaches the client's history where it was
// given: the run that goes on with it starts with an activity snapshot of
// it (the city, the form, the plan rejected with a comment and approved,
// the booking rejected with its reason), as the server read it.
func TestAnswersInTheHistory(t *testing.T) {
	e := newEnv(t, 0)
	msgs := []Message{user("m1", "Organise our offsite")}
	evs := e.run("planner-a", RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: msgs})
	plans := 0
	var got []string
	var rejection map[string]any
	for i := 2; i < 12; i++ {
		last := evs[len(evs)-1]
		if last.Outcome == nil || last.Outcome.Type != "interrupt" {
			break
		}
		in := last.Outcome.Interrupts[0]
		var answer string
		switch {
		case in.Reason == "question" && strings.Contains(in.Message, "Lisbon"):
			answer = `"Lisbon"`
		case in.Reason == "question":
			answer = `{"people": 12, "length": "2 days"}`
		case in.Reason == "plan_review" && plans == 0:
			plans++
			answer = `{"action": "reject", "feedback": "make it cheaper"}`
		case in.Reason == "plan_review":
			answer = `true`
		case in.Reason == "tool_approval":
			answer = `{"action": "reject", "message": "over budget"}`
		default:
			t.Fatalf("unexpected interrupt %+v", in)
		}
		evs = e.run("planner-a", RunAgentInput{ThreadID: "t1", RunID: "r" + string(rune('0'+i)), Messages: msgs,
			Resume: []ResumeEntry{{InterruptID: in.ID, Status: "resolved", Payload: json.RawMessage(answer)}}})
		if evs[0].Type != RunStarted {
			t.Fatalf("the first event is %s", evs[0].Type)
		}
		n := 0
		for _, ev := range evs {
			if ev.Type != ActivitySnapshot {
				continue
			}
			n++
			c, _ := ev.Content.(map[string]any)
			if ev.ActivityType != AnswerActivity || ev.MessageID != "answer-"+in.ID || c["interruptId"] != in.ID {
				t.Errorf("activity %+v; want the answer to %s", ev, in.ID)
			}
			text, _ := c["text"].(string)
			got = append(got, text)
			// The client keeps it in its history and sends it back.
			msgs = append(msgs, Message{ID: ev.MessageID, Role: "activity", ActivityType: ev.ActivityType, Content: mustJSON(c)})
			if c["outcome"] == "rejected" && in.Reason == "tool_approval" {
				rejection = c
			}
		}
		if n != 1 || evs[1].Type != ActivitySnapshot {
			t.Errorf("run %d: %d answer snapshots, the second event %s; want the answer first", i, n, evs[1].Type)
		}
	}
	want := []string{"Lisbon", "Number of people: 12, Length: 2 days", "Rejected the plan: make it cheaper", "Approved the plan", "Approved the plan", "Rejected " + planner.BookVenue + ": over budget"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the answers in the history:\n%q\nwant\n%q", got, want)
	}
	if rejection == nil || !strings.Contains(string(mustJSON(rejection["answer"])), "over budget") {
		t.Errorf("the rejection's activity %v; want its answer with the reason", rejection)
	}
	// The client sent the activities back with its history: they are not
	// part of the thread (only the one user message is).
	var v struct {
		Messages []struct {
			Type string `json:"type"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(e.threadValues("t1"), &v)
	humans := 0
	for _, m := range v.Messages {
		if m.Type == "human" {
			humans++
		}
	}
	if humans != 1 {
		t.Errorf("%d human messages in the thread; the answers went to the interrupts", humans)
	}
}
