package openaiapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/planner"
)

// historyOfThread reads GET /v1/threads/{id}/messages.
func (e *env) historyOfThread(thread string) (int, HistoryList) {
	e.t.Helper()
	resp, err := http.Get(e.srv.URL + "/v1/threads/" + thread + "/messages")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var l HistoryList
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &l); err != nil {
			e.t.Fatalf("%v: %s", err, b)
		}
	}
	return resp.StatusCode, l
}

// The history the wire returns holds the person's answers where they
// were given, as the server read them — the city, the form's values, the
// plan rejected with the comment, the plans approved, the booking
// rejected with its reason — between the agent's messages, not only in
// the client's copy of the conversation.
func TestHistoryHasTheAnswers(t *testing.T) {
	e := newEnv(t, 0)
	c := &conversation{e: e, model: "planner"}
	for _, say := range []string{"Organise our team offsite", "lisbon", "people: 12\nlength: 2 days", "make it cheaper", "yes", "yes"} {
		c.say(say)
	}
	got := c.say("reject: over budget")
	thread := got.Trellis.ThreadID
	st, l := e.historyOfThread(thread)
	if st != http.StatusOK || l.Object != "list" || l.ThreadID != thread {
		t.Fatalf("history: %d %+v", st, l)
	}
	var users []string
	var last *HistoryMessage
	for i, m := range l.Data {
		if m.Role == "user" {
			users = append(users, m.Content)
			last = &l.Data[i]
		}
	}
	want := []string{"Organise our team offsite", "Lisbon", "Number of people: 12, Length: 2 days", "Rejected the plan: make it cheaper",
		"Approved the plan", "Approved the plan", "Rejected " + planner.BookVenue + ": over budget"}
	if strings.Join(users, "|") != strings.Join(want, "|") {
		t.Errorf("the history's user side:\n%q\nwant\n%q", users, want)
	}
	if last == nil || last.Trellis == nil || last.Trellis.Outcome != "rejected" || !strings.Contains(string(last.Trellis.Answer), "over budget") || last.Trellis.InterruptID == "" {
		t.Errorf("the rejection's structured side: %+v", last)
	}
	// The agent's reply after the rejection comes after it.
	if n := len(l.Data); n == 0 || l.Data[n-1].Role != "assistant" || l.Data[n-1].Content == "" {
		t.Errorf("the history does not end with the agent's reply: %+v", l.Data[len(l.Data)-1])
	}
	if st, _ := e.historyOfThread("no-such-thread"); st != http.StatusNotFound {
		t.Errorf("an unknown thread: %d, want 404", st)
	}
}
