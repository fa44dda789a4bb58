package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	teval "github.com/trellis-agents/trellis/eval"
	_ "github.com/trellis-agents/trellis/eval/evaluators" // the planner set's criteria
)

// getJSON GETs url and decodes its answer, returning the status.
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v in %s", url, err, b)
		}
	}
	return res.StatusCode
}

// plannerCase is the planner eval set's booked case.
func plannerCase(t *testing.T) teval.Case {
	t.Helper()
	ds, err := teval.LoadDataset(filepath.Join("..", "..", "apps", "planner", "eval", "planner.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ds.Cases {
		if c.ID == "lisbon-booked" {
			return c
		}
	}
	t.Fatal("no lisbon-booked case in the planner set")
	return teval.Case{}
}

// GET /threads/{id}/case records a planner thread driven over HTTP as a
// case: its message, the answers with their interrupts' kinds, the final
// answer as the expected output. Run again, the recorded case passes the
// set's criteria: the recorder's output replays the conversation.
func TestRecordThreadCaseRoute(t *testing.T) {
	url := serve(t)
	ctx := context.Background()
	booked := plannerCase(t)
	target := &teval.ServerTarget{URL: url, Assistant: "planner"}
	exp, err := (&teval.Runner{Target: target, Experiment: "rec"}).Run(ctx, &teval.Dataset{Name: "p", Cases: []teval.Case{booked}})
	if err != nil {
		t.Fatal(err)
	}
	tr := exp.Cases[0].Trials[0]
	if !tr.Pass {
		t.Fatalf("the planner case failed over HTTP: %s", tr.Error)
	}
	var c teval.Case
	if code := getJSON(t, url+"threads/"+tr.ThreadID+"/case", &c); code != http.StatusOK {
		t.Fatalf("GET case: %d", code)
	}
	if c.ID != tr.ThreadID || c.Input.Message != booked.Input.Message || c.Metadata["recorded_from"] != tr.ThreadID {
		t.Errorf("the recorded case: id %q input %q metadata %v", c.ID, c.Input.Message, c.Metadata)
	}
	var kinds []string
	for _, a := range c.Answers {
		kinds = append(kinds, a.Kind)
	}
	if got := strings.Join(kinds, ","); !strings.HasPrefix(got, "planexec_ask,planexec_ask,planexec_plan_review") || !strings.HasSuffix(got, "tool_approval") {
		t.Errorf("the answers' kinds: %s", got)
	}
	if len(c.Answers) > 0 && string(c.Answers[0].Value) != `"Lisbon"` {
		t.Errorf("the first answer: %s", c.Answers[0].Value)
	}
	var out string
	if err := json.Unmarshal(c.Expect.Output, &out); err != nil || !strings.HasPrefix(out, "Your offsite is booked") {
		t.Errorf("the expected output: %s", c.Expect.Output)
	}
	// The node path is the one a replay reports, and the expected tool
	// calls are the planner's own, made inside its plan steps.
	ran, err := target.Thread(ctx, tr.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Expect.Nodes) == 0 || strings.Join(c.Expect.Nodes, ",") != strings.Join(ran.Nodes, ",") {
		t.Errorf("the recorded node path %v, want the thread's %v", c.Expect.Nodes, ran.Nodes)
	}
	var names []string
	for _, tc := range c.Expect.ToolCalls {
		names = append(names, tc.Name)
	}
	t.Logf("recorded tool calls: %v", names)
	if !slices.Contains(names, "book_venue") {
		t.Errorf("the recorded tool calls %v miss the plan step's book_venue", names)
	}
	c.ID = "replayed"
	c.Criteria = booked.Criteria
	again, err := (&teval.Runner{Target: target, Experiment: "replay"}).Run(ctx, &teval.Dataset{Name: "p", Cases: []teval.Case{c}})
	if err != nil {
		t.Fatal(err)
	}
	if r := again.Cases[0].Trials[0]; !r.Pass {
		t.Errorf("the recorded case does not replay: %s %+v", r.Error, r.Scores)
	}

	// A thread that never ran has nothing to record; an unknown one is 404.
	res, err := http.Post(url+"threads", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	err = json.NewDecoder(res.Body).Decode(&th)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if code := getJSON(t, url+"threads/"+th.ThreadID+"/case", nil); code != http.StatusConflict {
		t.Errorf("a thread that never ran: %d, want 409", code)
	}
	if code := getJSON(t, url+"threads/00000000-0000-0000-0000-000000000000/case", nil); code != http.StatusNotFound {
		t.Errorf("an unknown thread: %d, want 404", code)
	}
}
