package apps_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/builder"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/apps/scheduler"
	"github.com/trellis-agents/trellis/apps/sqlrouter"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaltest"
	_ "github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
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

	// The testplanner's plans as its scripted-model test establishes them:
	// one per tool, each with cases. (The other apps' cases are run for
	// real in TestAppEvalSetsPassOnTheScriptedModels.)
	var plans []map[string]any
	for _, tool := range []string{"cancel_order", "create_order", "get_customer", "list_orders", "refund_payment", "search_products", "update_stock"} {
		plans = append(plans, map[string]any{"tool": tool, "batch": 0, "cases": []map[string]any{{"name": "a case"}}})
	}
	b, _ := json.Marshal(plans)
	h, tp := readSet(t, "testplanner/eval/testplanner.jsonl")
	tp[0].Criteria = h.Criteria
	scoreAll(t, &tp[0], evaltest.NewThread().State("plans", string(b)).Build())
	short, _ := json.Marshal(plans[1:])
	e, _ := eval.New(h.Criteria[0])
	if s, _ := e.Evaluate(context.Background(), evaltest.Trial(&tp[0], evaltest.NewThread().State("plans", string(short)).Build())); s.Value != 0 {
		t.Errorf("the testplanner set passes with a tool unplanned: %+v", s)
	}
}

// scoreAll scores th with every criterion of c; each must reach its
// threshold.
func scoreAll(t *testing.T, c *eval.Case, th *eval.Thread) {
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
			t.Errorf("%s: %s scores %v: %s", c.ID, cr.Evaluator, s.Value, s.Explanation)
		}
	}
}

// liar wraps a scripted model and rewrites what it says: the model a team
// must not ship, whose replies claim what did not happen or change the
// figures. The apps' eval sets must fail it.
type liar struct {
	llm.Model
	rewrite func(string) string
}

func (l liar) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := l.Model.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *resp
	out.Message = resp.Message.Clone()
	for i, p := range out.Message.Parts {
		if p.Type == llm.PartText {
			out.Message.Parts[i].Text = l.rewrite(p.Text)
		}
	}
	for i, c := range out.Message.ToolCalls {
		out.Message.ToolCalls[i].Arguments = l.rewrite(c.Arguments)
	}
	return &out, nil
}

func (l liar) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		resp, err := l.Generate(ctx, req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		c := llm.Chunk{Text: resp.Message.Text(), Reasoning: resp.Message.Reasoning, Usage: &resp.Usage, FinishReason: resp.FinishReason, Model: resp.Model}
		for i, tc := range resp.Message.ToolCalls {
			c.ToolCalls = append(c.ToolCalls, llm.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		yield(c, nil)
	}
}

// appTarget opens an app on model as the CLI's in-process target does.
type appTarget func(t *testing.T, model llm.Model) *eval.GraphTarget

func appTargets(ctx context.Context) map[string]struct {
	script func() llm.Model
	open   appTarget
} {
	target := func(t *testing.T, app *apps.App) *eval.GraphTarget {
		if app.Close != nil {
			t.Cleanup(func() { app.Close() })
		}
		return &eval.GraphTarget{Graph: app.Graph, Saver: checkpoint.NewMemory(), Options: app.Options,
			Message: func(m string) (graph.Update, error) { return app.Input(m), nil }, Context: apps.WithScope}
	}
	type entry = struct {
		script func() llm.Model
		open   appTarget
	}
	return map[string]entry{
		"planner": {func() llm.Model { return planner.Script() }, func(t *testing.T, m llm.Model) *eval.GraphTarget {
			g, err := planner.NewGraph(m, planner.NewAgency())
			if err != nil {
				t.Fatal(err)
			}
			return target(t, &apps.App{Graph: g, Input: func(m string) graph.Update { return planexec.Input(m) }})
		}},
		"scheduler": {func() llm.Model { return scheduler.Script() }, func(t *testing.T, m llm.Model) *eval.GraphTarget {
			app, err := scheduler.New(ctx, scheduler.Config{Model: m, Database: filepath.Join(t.TempDir(), "app.db")})
			if err != nil {
				t.Fatal(err)
			}
			return target(t, app)
		}},
		"sqlrouter": {func() llm.Model { return sqlrouter.Script() }, func(t *testing.T, m llm.Model) *eval.GraphTarget {
			app, err := sqlrouter.New(ctx, sqlrouter.Config{Model: m, Database: filepath.Join(t.TempDir(), "library.db"), Sample: true})
			if err != nil {
				t.Fatal(err)
			}
			return target(t, app)
		}},
		"builder": {func() llm.Model { return builder.Script() }, func(t *testing.T, m llm.Model) *eval.GraphTarget {
			app, err := builder.New(ctx, builder.Config{Model: m})
			if err != nil {
				t.Fatal(err)
			}
			return target(t, app)
		}},
	}
}

// runSet runs an app's eval set through the eval runner on model.
func runSet(t *testing.T, ctx context.Context, name string, open appTarget, model llm.Model) *eval.Experiment {
	t.Helper()
	ds, err := eval.LoadDataset(name + "/eval/" + name + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := (&eval.Runner{Target: open(t, model), Experiment: "apps-" + name, Concurrency: 2}).Run(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// TestAppEvalSetsPassOnTheScriptedModels runs the planner's, scheduler's,
// SQL router's and builder's sets through the eval runner on their apps'
// scripted models: every case meets its criteria. (The testplanner's needs
// an MCP server; `trellis eval run` runs it, and its criterion is checked
// in TestAppEvalSetsFollowTheScripts.)
func TestAppEvalSetsPassOnTheScriptedModels(t *testing.T) {
	ctx := context.Background()
	for name, app := range appTargets(ctx) {
		t.Run(name, func(t *testing.T) {
			exp := runSet(t, ctx, name, app.open, app.script())
			for _, c := range exp.Cases {
				if !c.Pass {
					t.Errorf("%s: %s fails on the scripted model: %s", name, c.ID, explain(c))
				}
			}
		})
	}
}

// TestAppEvalSetsFailABrokenModel runs each set on its app's scripted model
// made to lie (claim a rejected booking, place a declined session, change
// the figures, look up the wrong policy): the set must catch it.
func TestAppEvalSetsFailABrokenModel(t *testing.T) {
	ctx := context.Background()
	// Each lie is narrow — the model still plays its scenario — and names
	// the case that must catch it.
	lies := map[string]struct {
		lie    *strings.Replacer
		caught string
	}{
		"planner":   {strings.NewReplacer("Nothing was booked", "Your offsite is booked"), "rejected-booking-not-claimed"},
		"scheduler": {strings.NewReplacer("Not placed", "Placed"), "student-declines-every-change"},
		"sqlrouter": {strings.NewReplacer("of the year's", "of the decade's"), "genres-2025"},
		"builder":   {strings.NewReplacer(`"returns"`, `"warranty"`), "faulty-headphones"},
	}
	for name, app := range appTargets(ctx) {
		t.Run(name, func(t *testing.T) {
			l := lies[name]
			exp := runSet(t, ctx, name, app.open, liar{app.script(), l.lie.Replace})
			for _, c := range exp.Cases {
				if c.ID == l.caught {
					if c.Pass {
						t.Errorf("%s: %s passes on a model that lies", name, c.ID)
					}
					t.Logf("%s: %s", c.ID, explain(c))
					return
				}
			}
			t.Fatalf("%s has no case %s", name, l.caught)
		})
	}
}

// explain gives a case's first trial, with its scores and explanations.
func explain(c eval.CaseResult) string {
	if len(c.Trials) == 0 {
		return "no trials"
	}
	return fmt.Sprintf("%+v", c.Trials[0])
}
