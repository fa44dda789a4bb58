package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// fakeStore is a thread's runs and their logs, held in memory.
type fakeStore struct {
	runs   []db.Run // oldest first
	events map[string][]db.Event
	err    error
}

func (f *fakeStore) ListRuns(_ context.Context, _, _ string, q db.RunQuery) ([]db.Run, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := make([]db.Run, 0, len(f.runs))
	for i := len(f.runs) - 1; i >= 0 && (q.Limit == 0 || len(out) < q.Limit); i-- {
		out = append(out, f.runs[i])
	}
	return out, nil
}

func (f *fakeStore) ReadEvents(_ context.Context, _, runID string, _ int64, _ int) ([]db.Event, error) {
	return f.events[runID], nil
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// add appends a run with its request and log (name, JSON data pairs).
func (f *fakeStore) add(id, kwargs string, log ...string) {
	f.runs = append(f.runs, db.Run{ID: id, Status: db.RunSuccess, Kwargs: json.RawMessage(kwargs), CreatedAt: t0.Add(time.Duration(len(f.runs)) * time.Minute)})
	if f.events == nil {
		f.events = map[string][]db.Event{}
	}
	for i := 0; i+1 < len(log); i += 2 {
		f.events[id] = append(f.events[id], db.Event{RunID: id, Seq: int64(i/2 + 1), Event: log[i], Data: json.RawMessage(log[i+1])})
	}
}

func summary(turns []Turn) string {
	var out []string
	for _, t := range turns {
		switch t.Kind {
		case KindMessage:
			var m struct {
				ID      string `json:"id"`
				Content string `json:"content"`
			}
			_ = json.Unmarshal(t.Message, &m)
			out = append(out, "msg "+m.Content)
		case KindAnswer:
			out = append(out, fmt.Sprintf("answer[%s] %s (%s)", t.InterruptID, t.Text, t.Outcome))
		case KindEvent:
			out = append(out, "event "+string(t.Data))
		case KindRun:
			out = append(out, "run "+t.RunID)
		default:
			out = append(out, t.Kind+" "+t.Text)
		}
	}
	return strings.Join(out, "\n")
}

const approval = `{"kind":"tool_approval","call_id":"c1","tool":"book_venue","arguments":{"venue":"Quinta"},"summary":"Book Quinta"}`

// A run asks (an approval and a question at once), the next answers both
// by interrupt ID; the answers come where the second run began, after the
// first run's messages and before the second's, with the sentences the
// agents' own answer types give ("no" to an approval is a rejection).
func TestBuildPairsAnswersWithTheirQuestions(t *testing.T) {
	f := &fakeStore{}
	f.add("r1", `{"input":{"messages":[{"type":"human","content":"hi"}]}}`,
		"values", `{"messages":[{"id":"h1","type":"human","content":"hi"}]}`,
		"custom", `{"kind":"step_started","title":"Book"}`,
		"values", `{"messages":[{"id":"h1"},{"id":"a1"}]}`,
		"values", `{"__interrupt__":[{"id":"i1","value":`+approval+`},{"id":"i2","value":{"kind":"planexec_ask","question":"Which city?","mode":"select","options":["Lisbon","Porto"]}}]}`)
	f.add("r2", `{"command":{"resume":{"i2":"Porto","i1":"no"}}}`,
		"updates", `{"agent":{"messages":[{"id":"a2"}]}}`,
		"error", `{"error":"RunError","message":"boom"}`)
	th := db.Thread{ID: "t", Values: json.RawMessage(`{"messages":[{"id":"h1","type":"human","content":"hi"},{"id":"a1","type":"ai","content":"first"},{"id":"a2","type":"ai","content":"second"}]}`)}
	turns, err := Build(context.Background(), f, nil, "x", th)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"run r1",
		"msg hi",
		`event {"kind":"step_started","title":"Book"}`,
		"msg first",
		"wait Approve book_venue? Book Quinta\nWhich city?",
		"run r2",
		"answer[i1] Rejected book_venue (rejected)",
		"answer[i2] Porto (answered)",
		"msg second",
		"error boom",
	}, "\n")
	if got := summary(turns); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

// Messages the state no longer holds are dropped, state order wins over
// the logs', and messages no log showed follow the one before them.
func TestBuildFollowsTheState(t *testing.T) {
	f := &fakeStore{}
	f.add("r1", `{}`, "values", `{"messages":[{"id":"gone"},{"id":"b"}]}`, "values", `{"messages":[{"id":"gone"},{"id":"b"},{"id":"a"}]}`)
	th := db.Thread{ID: "t", Values: json.RawMessage(`{"messages":[{"id":"a","content":"A"},{"id":"b","content":"B"},{"id":"c","content":"C"}]}`)}
	turns, err := Build(context.Background(), f, nil, "x", th)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(turns); got != "run r1\nmsg A\nmsg B\nmsg C" {
		t.Errorf("transcript:\n%s", got)
	}
}

// A run whose request or log does not decode still shows what can be
// read; a store failure is the caller's error.
func TestBuildBadInput(t *testing.T) {
	f := &fakeStore{}
	f.add("r1", `not json`, "values", `{"__interrupt__": 7}`, "custom", `{"kind":"x"}`, "messages|s:1", `[{"id":"m","additional_kwargs":{"reasoning_content":"hmm"}}]`, "messages|s:1", `[{"id":"m","additional_kwargs":{"reasoning_content":" more"}}]`)
	f.add("r2", `{"command":{"resume":"orphan"}}`)
	turns, err := Build(context.Background(), f, nil, "x", db.Thread{ID: "t", Values: json.RawMessage(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(turns); got != "run r1\nevent {\"kind\":\"x\"}\nreasoning hmm more\nrun r2\nanswer[] orphan (answered)" {
		t.Errorf("transcript:\n%s", got)
	}
	f.err = errors.New("db down")
	if _, err := Build(context.Background(), f, nil, "x", db.Thread{ID: "t"}); err == nil || !strings.Contains(err.Error(), "db down") {
		t.Errorf("a store failure: %v", err)
	}
}

// Each kind of answer reads as the agent read it.
func TestDescribe(t *testing.T) {
	review := `{"kind":"planexec_plan_review","plan":{"task":"t","steps":[{"id":"a","title":"A"}]}}`
	form := `{"kind":"planexec_ask","mode":"form","question":"Q","fields":[{"key":"people","label":"Number of people","type":"number"},{"key":"ok","label":"Fine","type":"boolean"}]}`
	for _, c := range []struct{ asked, answer, text, outcome string }{
		{approval, `true`, "Approved book_venue", OutcomeApproved},
		{approval, `{"action":"reject","message":"over budget"}`, "Rejected book_venue: over budget", OutcomeRejected},
		{approval, `{"decisions":[{"type":"reject","message":"no"}]}`, "Rejected book_venue: no", OutcomeRejected},
		{approval, `{"action":"edit","arguments":{"venue":"Rio"}}`, `Approved book_venue with edited arguments: {"venue":"Rio"}`, OutcomeEdited},
		{review, `"yes"`, "Approved the plan", OutcomeApproved},
		{review, `"make it cheaper"`, "Rejected the plan: make it cheaper", OutcomeRejected},
		{review, `{"action":"edit","plan":{"task":"t","steps":[{"id":"a","title":"A"},{"id":"b","title":"B"}]}}`, "Edited the plan: 1. A; 2. B", OutcomeEdited},
		{form, `{"ok":true,"people":12,"extra":"x"}`, "Number of people: 12, Fine: yes, extra: x", OutcomeAnswered},
		{`{"kind":"planexec_ask","mode":"select"}`, `{"choice":"Porto"}`, "Porto", OutcomeAnswered},
		{`{"kind":"client_tool_call","tool":"get_location"}`, `{"content":"Lisbon"}`, "Result of get_location: Lisbon", OutcomeResult},
		{`{"kind":"client_tool_call","tool":"get_location"}`, `{"content":"","error":"denied"}`, "The client's get_location failed: denied", OutcomeFailed},
		{`"free"`, `{"a": 1}`, `{"a":1}`, OutcomeAnswered},
	} {
		text, outcome := Describe(json.RawMessage(c.asked), json.RawMessage(c.answer))
		if text != c.text || outcome != c.outcome {
			t.Errorf("Describe(%s, %s) = %q %s; want %q %s", c.asked, c.answer, text, outcome, c.text, c.outcome)
		}
	}
	long := strings.Repeat("é", maxText)
	if text, _ := Describe(nil, json.RawMessage(`"`+long+`"`)); len(text) > maxText+len("…") || !strings.HasSuffix(text, "…") {
		t.Errorf("a long answer is %d bytes", len(text))
	}
}

// Answers reads one run's answers as Build does, from its request and the
// run before it.
func TestAnswersOfOneRun(t *testing.T) {
	f := &fakeStore{}
	f.add("r1", `{"input":{"messages":[{"type":"human","content":"hi"}]}}`, "values", `{"__interrupt__":[{"id":"i1","value":`+approval+`}]}`)
	f.add("r2", `{"command":{"resume":{"action":"reject","message":"over budget"}}}`)
	f.add("r3", `{"input":{"messages":[{"type":"human","content":"again"}]}}`)
	got, err := Answers(context.Background(), f, "x", "t", "r2")
	if err != nil || len(got) != 1 || got[0].InterruptID != "i1" || got[0].Text != "Rejected book_venue: over budget" || got[0].RunID != "r2" {
		t.Errorf("Answers(r2) = %+v, %v", got, err)
	}
	if got, err := Answers(context.Background(), f, "x", "t", "r3"); err != nil || len(got) != 0 {
		t.Errorf("Answers(r3) = %+v, %v; want none (new input)", got, err)
	}
	if got, err := Answers(context.Background(), f, "x", "t", "nope"); err != nil || got != nil {
		t.Errorf("Answers(unknown) = %+v, %v", got, err)
	}
}
