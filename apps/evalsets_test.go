package apps_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/trellis-agents/trellis/apps/builder"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/apps/scheduler"
	"github.com/trellis-agents/trellis/apps/sqlrouter"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaltest"
	_ "github.com/trellis-agents/trellis/eval/evaluators"
)

// header is the first line of a JSONL eval set.
type header struct {
	Name        string           `json:"name"`
	Version     string           `json:"version"`
	Description string           `json:"description"`
	Criteria    []eval.Criterion `json:"criteria"`
}

func strict(line []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// readSet reads an app's eval set strictly: a misspelt field is an error.
func readSet(t *testing.T, path string) (header, []eval.Case) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var h header
	var cases []eval.Case
	for n := 1; sc.Scan(); n++ {
		if n == 1 {
			if err := strict(sc.Bytes(), &h); err != nil {
				t.Fatalf("%s:1: header: %v", path, err)
			}
			continue
		}
		var c eval.Case
		if err := strict(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return h, cases
}

// TestAppEvalSets checks every app's eval set: the header names the app,
// case IDs are unique, each case has exactly one kind of input, answer
// rules compile, and every criterion names a registered evaluator whose
// params are valid.
func TestAppEvalSets(t *testing.T) {
	paths, err := filepath.Glob("*/eval/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"builder": true, "planner": true, "scheduler": true, "sqlrouter": true, "testplanner": true}
	for _, path := range paths {
		app := filepath.Base(filepath.Dir(filepath.Dir(path)))
		delete(want, app)
		h, cases := readSet(t, path)
		if h.Name != app || h.Version == "" || h.Description == "" || len(cases) == 0 {
			t.Errorf("%s: header %+v with %d cases", path, h, len(cases))
		}
		build := func(where string, cs []eval.Criterion) {
			for _, c := range cs {
				if _, err := eval.New(c); err != nil {
					t.Errorf("%s: %s: %v", path, where, err)
				}
			}
		}
		build("header", h.Criteria)
		seen := map[string]bool{}
		for _, c := range cases {
			if c.ID == "" || seen[c.ID] {
				t.Errorf("%s: empty or duplicate case ID %q", path, c.ID)
			}
			seen[c.ID] = true
			if (c.Input.Message == "") == (len(c.Input.State) == 0) {
				t.Errorf("%s: %s: exactly one of input.message and input.state", path, c.ID)
			}
			for _, a := range c.Answers {
				if _, err := regexp.Compile(a.Question); err != nil {
					t.Errorf("%s: %s: answer question: %v", path, c.ID, err)
				}
				if len(a.Value) == 0 {
					t.Errorf("%s: %s: an answer without a value", path, c.ID)
				}
			}
			build(c.ID, c.Criteria)
		}
	}
	for app := range want {
		t.Errorf("the %s app has no eval set (want %s/eval/%s.jsonl)", app, app, app)
	}
}

func caseOf(t *testing.T, path, id string) *eval.Case {
	t.Helper()
	_, cases := readSet(t, path)
	for i := range cases {
		if cases[i].ID == id {
			return &cases[i]
		}
	}
	t.Fatalf("%s has no case %s", path, id)
	return nil
}

func outputText(t *testing.T, c *eval.Case) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(c.Expect.Output, &s); err != nil {
		t.Fatalf("%s: expect.output: %v", c.ID, err)
	}
	return s
}

// TestAppEvalSetsFollowTheScripts ties the sets to the apps' constants, so
// a change of a scripted text fails here rather than in the eval run, and
// scores the outcomes the apps' own tests establish against the cases'
// criteria: each must pass.
func TestAppEvalSetsFollowTheScripts(t *testing.T) {
	lisbon := caseOf(t, "planner/eval/planner.jsonl", "lisbon-booked")
	if lisbon.Input.Message != planner.Task || outputText(t, lisbon) != planner.DeliveredText {
		t.Error("planner lisbon-booked: input or output differs from the app's Task and DeliveredText")
	}
	for path, scope := range map[string]string{
		"planner/eval/planner.jsonl":     planner.Scope,
		"scheduler/eval/scheduler.jsonl": scheduler.Scope,
	} {
		if got := outputText(t, caseOf(t, path, "out-of-scope")); got != scope {
			t.Errorf("%s out-of-scope: %q, want the app's Scope", path, got)
		}
	}
	for _, id := range []string{"other-year", "other-question"} {
		if outputText(t, caseOf(t, "sqlrouter/eval/sqlrouter.jsonl", id)) != sqlrouter.Scope {
			t.Errorf("sqlrouter %s: not the app's Scope", id)
		}
	}
	if caseOf(t, "sqlrouter/eval/sqlrouter.jsonl", "genres-2025").Input.Message != sqlrouter.Question ||
		caseOf(t, "builder/eval/builder.jsonl", "faulty-headphones").Input.Message != builder.Question ||
		caseOf(t, "scheduler/eval/scheduler.jsonl", "tight-week").Input.Message != scheduler.Request {
		t.Error("an input differs from its app's scripted question")
	}

	score := func(c *eval.Case, th *eval.Thread) {
		t.Helper()
		for _, cr := range c.Criteria {
			e, err := eval.New(cr)
			if err != nil {
				t.Fatal(err)
			}
			s, err := e.Evaluate(context.Background(), evaltest.Trial(c, th))
			if err != nil {
				t.Fatal(err)
			}
			if s.Value < cr.ThresholdOrDefault() {
				t.Errorf("%s: %s scores %v on the app's known outcome: %s", c.ID, cr.Evaluator, s.Value, s.Explanation)
			}
		}
	}
	// The outcomes apps/planner's truth tests establish.
	asked := func(b *evaltest.ThreadBuilder) *evaltest.ThreadBuilder {
		return b.Interrupt("planexec_ask", planner.CityQuestion, `"Lisbon"`).
			Interrupt("planexec_ask", planner.FormQuestion, `{"people":12}`).
			Interrupt("planexec_plan_review", "", `{"action":"approve"}`).
			Interrupt("planexec_plan_review", "", `{"action":"approve"}`).
			Interrupt("tool_approval", "Book Quinta Verde for 12 people, 2 days from Jun 9", `{"action":"approve"}`)
	}
	score(lisbon, asked(evaltest.NewThread().User(planner.Task)).
		Call("search_venues", `{"city":"Lisbon","people":12}`, "").Call("list_activities", `{"city":"Lisbon"}`, "").
		Call("check_availability", `{}`, "").Call("estimate_budget", `{}`, "").Call("book_venue", `{}`, "Booked").
		Assistant(planner.DeliveredText).Build())
	rejected := caseOf(t, "planner/eval/planner.jsonl", "rejected-booking-not-claimed")
	score(rejected, asked(evaltest.NewThread().User(planner.Task)).
		Call("search_venues", `{}`, "").Rejected("book_venue", `{"venue":"Quinta Verde"}`, "too far from the office").
		Assistant(`Nothing was booked: you rejected booking Quinta Verde for 12 people, 2 days from Jun 9, saying: "too far from the office".`).Build())
	berlin := caseOf(t, "planner/eval/planner.jsonl", "berlin-answers-honoured")
	score(berlin, evaltest.NewThread().User(planner.Task).
		Interrupt("planexec_ask", planner.CityQuestion, `"Berlin"`).Interrupt("planexec_ask", planner.FormQuestion, `{}`).
		Assistant("Your offsite is booked: Kiez Studio for 8 people, 3 days from Jun 17 (confirmation OFF-001).").Build())
	// The scheduler's outcome as its scripted-scenario test checks it.
	week := caseOf(t, "scheduler/eval/scheduler.jsonl", "friday-free-one-rejected")
	score(week, evaltest.NewThread().User(scheduler.Request).
		Interrupt("planexec_ask", "Your limits", `{}`).Interrupt("planexec_plan_review", "", `{}`).
		Interrupt("tool_approval", "Place #23", `{}`).
		Call("place", `{"id":20}`, "").Rejected("place", `{"id":23}`, "keep the study hall for reading").
		Assistant("Your week:\nPlaced Essay (#20) at Tuesday slot 1.\nNot placed #23: the student turned it down (keep the study hall for reading).\nFriday stays free, as you asked.").Build())
	// The builder's path and lookups as its scripted-run test checks them.
	score(caseOf(t, "builder/eval/builder.jsonl", "faulty-headphones"), evaltest.NewThread().User(builder.Question).
		Nodes("answer", "review", "answer", "review").
		Call("lookup_policy", `{"topic":"returns"}`, "").Call("lookup_policy", `{"topic":"shipping"}`, "").Build())
}
