package openaiapi

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/tool"
)

func payload(t *testing.T, v any) pending {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return pending{ID: "i1", Value: b}
}

// Plain answers map to the resume value each kind of interrupt takes, and
// the values decode as the agents' own answer types.
func TestParseAnswer(t *testing.T) {
	sel := payload(t, planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskSelect, Question: "City?", Options: planner.Cities})
	form := payload(t, planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskForm, Question: "Details", Fields: append(planner.FormFields(),
		planexec.Field{Key: "friday_free", Label: "Keep Friday free", Type: planexec.FieldBoolean})})
	text := payload(t, planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskText, Question: "Why?"})
	review := payload(t, planexec.PlanReview{Kind: planexec.ReviewKind, Plan: planner.InitialPlan()})
	approval := payload(t, tool.ApprovalRequest{Kind: tool.ApprovalKind, CallID: "c1", Tool: planner.BookVenue, Arguments: json.RawMessage(`{"venue":"Quinta Verde"}`)})
	human := payload(t, router.Question{Kind: router.QuestionKind, Question: "Which year?"})
	other := pending{ID: "i9", Value: json.RawMessage(`"what?"`)}
	for _, c := range []struct {
		name string
		p    pending
		text string
		want string // the value, as compact JSON; "" when refused
		prob string // in the problems when refused
	}{
		{"option by number", sel, "2", `{"choice":"Berlin"}`, ""},
		{"option by number with a dot", sel, "3.", `{"choice":"Prague"}`, ""},
		{"option by label, any case", sel, " lisbon ", `{"choice":"Lisbon"}`, ""},
		{"number out of range", sel, "4", "", "4 is not an option: choose 1 to 3"},
		{"not an option", sel, "Paris", "", "choose one of the options"},
		{"form by lines", form, "people: 12\nLength: 2 days\nnotes: veggie", `{"values":{"length":"2 days","notes":"veggie","people":12}}`, ""},
		{"form by labels, ; and a select by number", form, "Number of people：8; length: 3", `{"values":{"length":"3 days","people":8}}`, ""},
		{"form as JSON", form, `{"people": 5, "length": "1 day", "friday_free": true}`, `{"values":{"friday_free":true,"length":"1 day","people":5}}`, ""},
		{"form boolean word", form, "people: 2\nlength: 1 day\nKeep Friday free: 是", `{"values":{"friday_free":true,"length":"1 day","people":2}}`, ""},
		{"form missing a required field", form, "people: 12", "", "Length is required"},
		{"form unknown field", form, "people: 12\ncolour: red", "", `"colour" is not a field`},
		{"form out of bounds", form, "people: 99\nlength: 1 day", "", "at most 40"},
		{"form not a line", form, "twelve people please", "", "is not a field: value line"},
		{"text", text, "because", `{"text":"because"}`, ""},
		{"empty", text, "  ", "", "the answer is empty"},
		{"plan yes", review, "Yes.", `true`, ""},
		{"plan 确认", review, "确认", `true`, ""},
		{"plan 否", review, "否", `false`, ""},
		{"plan feedback", review, "make it cheaper", `{"action":"reject","feedback":"make it cheaper"}`, ""},
		{"plan edit", review, `edit {"task":"t","steps":[{"id":"a","title":"A","description":"d"}]}`, `{"action":"edit","plan":{"task":"t","steps":[{"id":"a","title":"A","description":"d"}]}}`, ""},
		{"plan edit bad JSON", review, `edit {"task":`, "", "edit must be followed by the plan"},
		{"approve", approval, "approve", `true`, ""},
		{"approve 是", approval, "是", `true`, ""},
		{"reject 拒绝", approval, "拒绝", `false`, ""},
		{"reject with why", approval, "reject: too expensive", `{"action":"reject","message":"too expensive"}`, ""},
		{"edit arguments", approval, `edit: {"venue":"Casa do Rio"}`, `{"action":"edit","arguments":{"venue":"Casa do Rio"}}`, ""},
		{"edit not an object", approval, `edit [1]`, "", "is not a decision"},
		{"not a decision", approval, "maybe", "", `"maybe" is not a decision`},
		{"ask_human", human, "2025", `"2025"`, ""},
		{"unknown kind, JSON", other, `{"a":1}`, `{"a":1}`, ""},
		{"unknown kind, text", other, "fine", `"fine"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, probs := parseAnswer(c.p, c.text)
			if c.want == "" {
				if got != nil || !strings.Contains(strings.Join(probs, "; "), c.prob) {
					t.Errorf("got %s, problems %q; want refused with %q", got, probs, c.prob)
				}
				return
			}
			if len(probs) > 0 || compact(got) != compact(json.RawMessage(c.want)) {
				t.Fatalf("got %s (problems %q), want %s", got, probs, c.want)
			}
			// The agent's own answer type reads the value.
			var err error
			switch c.p.kind() {
			case planexec.AskKind:
				var a planexec.AskAnswer
				err = json.Unmarshal(got, &a)
			case planexec.ReviewKind:
				var d planexec.ReviewDecision
				err = json.Unmarshal(got, &d)
			case tool.ApprovalKind:
				var d tool.Decision
				err = json.Unmarshal(got, &d)
			}
			if err != nil {
				t.Errorf("the agent cannot read %s: %v", got, err)
			}
		})
	}
}

// Each kind reads as text a person can answer, and as an interaction.
func TestDescribe(t *testing.T) {
	sel := payload(t, planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskSelect, Question: "City?", Options: planner.Cities, Problems: []string{"pick one"}})
	text, ia := describe(sel)
	if !strings.HasPrefix(text, "That answer did not fit: pick one") || !strings.Contains(text, "City?\n\n1. Lisbon\n2. Berlin\n3. Prague") {
		t.Errorf("select text %q", text)
	}
	if ia.ID != "i1" || ia.Kind != kindQuestion || ia.Mode != "select" || len(ia.Options) != 3 || len(ia.Problems) != 1 || len(ia.Payload) == 0 {
		t.Errorf("select interaction %+v", ia)
	}
	text, ia = describe(payload(t, planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskForm, Question: "Details", Fields: planner.FormFields()}))
	if !strings.Contains(text, "- Number of people (people): a number from 1 to 40, required") || !strings.Contains(text, "(notes): text, optional") || len(ia.Fields) == 0 {
		t.Errorf("form text %q, fields %s", text, ia.Fields)
	}
	text, ia = describe(payload(t, planexec.PlanReview{Kind: planexec.ReviewKind, Plan: planner.InitialPlan()}))
	if !strings.Contains(text, "5. Book the venue [book] (after availability, budget)") || ia.Kind != kindPlan || len(ia.Plan) == 0 {
		t.Errorf("plan text %q", text)
	}
	text, ia = describe(payload(t, tool.ApprovalRequest{Kind: tool.ApprovalKind, Tool: "book_venue", Arguments: json.RawMessage(`{"venue": "X"}`), Summary: "Book X", Problem: "bad edit"}))
	if !strings.Contains(text, `Approve this call? book_venue {"venue":"X"}`) || !strings.Contains(text, "Book X") || ia.Kind != kindApproval || ia.Tool != "book_venue" || ia.Problems[0] != "bad edit" {
		t.Errorf("approval text %q, %+v", text, ia)
	}
	if text, ia = describe(pending{ID: "x", Value: json.RawMessage(`{"n": 1}`)}); ia.Kind != kindOther || !strings.Contains(text, `{"n":1}`) {
		t.Errorf("other text %q, %+v", text, ia)
	}
}

// The record of recent turns keeps the newest recentSize.
func TestRecentTurnsForgetsTheOldest(t *testing.T) {
	var c recentTurns
	for i := range recentSize + 1 {
		c.put(strconv.Itoa(i), "t")
	}
	if _, ok := c.get("0"); ok || len(c.ids) != recentSize {
		t.Errorf("the oldest is kept, or %d entries (want %d)", len(c.ids), recentSize)
	}
	if _, ok := c.get("1"); !ok {
		t.Error("the second oldest is forgotten")
	}
	c.put("1", "t2")
	if id, _ := c.get("1"); id != "t2" || len(c.ids) != recentSize {
		t.Errorf("1 = %q with %d entries, want t2 and the size kept", id, len(c.ids))
	}
}
