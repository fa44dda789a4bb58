package apps_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

// drive runs a case on g the way the eval runner does, without it: the
// input message, then each interrupt answered by the first of the case's
// answers that matches it (kind, question pattern; once unless repeat),
// until the run ends. It returns the thread as evaluators see it: the
// state, the conversation (with a plan-and-execute agent's delivered
// answer), the trajectory of the conversation's tool calls, the node path
// and the interrupts with their answers.
func drive(t *testing.T, ctx context.Context, g *graph.Graph, input graph.Update, c *eval.Case) *eval.Thread {
	t.Helper()
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("eval-" + c.ID)}
	used := make([]bool, len(c.Answers))
	var asked []eval.Interrupt
	var nodes []string
	res, err := g.Invoke(ctx, input, opts...)
	for round := 0; res != nil; round++ {
		for _, n := range res.Path {
			nodes = append(nodes, n.Node)
		}
		if len(res.Interrupts) == 0 {
			break
		}
		if round == 20 {
			t.Fatalf("%s: still asking after %d rounds", c.ID, round)
		}
		answers := map[string]any{}
		for _, in := range res.Interrupts {
			var p struct{ Kind, Question string }
			_ = json.Unmarshal(in.Payload, &p)
			rec := eval.Interrupt{ID: in.ID, Kind: p.Kind, Question: p.Question, Payload: in.Payload}
			for i, a := range c.Answers {
				if (used[i] && !a.Repeat) || (a.Kind != "" && a.Kind != p.Kind) || !regexp.MustCompile(a.Question).MatchString(p.Question) {
					continue
				}
				used[i] = true
				answers[in.ID] = a.Value
				rec.Answer = a.Value
				break
			}
			if rec.Answer == nil {
				t.Fatalf("%s: no answer for the %q interrupt %q", c.ID, p.Kind, p.Question)
			}
			asked = append(asked, rec)
		}
		res, err = g.Invoke(ctx, nil, append(opts, graph.WithResumeMap(answers))...)
	}
	if err != nil || res == nil {
		t.Fatalf("%s: %v", c.ID, err)
	}
	b, err := res.State.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	th := &eval.Thread{ThreadID: "eval-" + c.ID, Interrupts: asked, Nodes: nodes}
	if err := json.Unmarshal(b, &th.State); err != nil {
		t.Fatal(err)
	}
	if raw, ok := th.State["messages"]; ok {
		if err := json.Unmarshal(raw, &th.Messages); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := th.State["planexec_summary"]; ok {
		if answer, ok := planexec.Answer(res.State); ok && th.FinalResponse() != answer {
			th.Messages = append(th.Messages, llm.Assistant(answer))
		}
	}
	th.ToolCalls = trajectory(th.Messages)
	return th
}

// trajectory is the tool calls of the conversation with their status, as
// the runner reads them: a result message starting "A person rejected this
// call" is a rejection, another error result an error.
func trajectory(msgs []llm.Message) []eval.ToolCall {
	results := map[string]llm.Message{}
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	var out []eval.ToolCall
	for _, m := range msgs {
		for _, call := range m.ToolCalls {
			tc := eval.ToolCall{Name: call.Name, Args: json.RawMessage(call.Arguments)}
			if r, ok := results[call.ID]; ok {
				tc.Result, tc.Status = r.Text(), "ok"
				switch {
				case r.IsError && strings.HasPrefix(r.Text(), "A person rejected this call"):
					tc.Status = "rejected"
				case r.IsError:
					tc.Status = "error"
				}
			}
			out = append(out, tc)
		}
	}
	return out
}

// TestAppEvalSetsPassOnTheScriptedModels runs the planner's, scheduler's,
// SQL router's and builder's cases on their apps' scripted models and
// scores them: the sets say what the apps do. (The testplanner's needs an
// MCP server and a store; its criterion is checked in
// TestAppEvalSetsFollowTheScripts.)
func TestAppEvalSetsPassOnTheScriptedModels(t *testing.T) {
	ctx := context.Background()
	open := map[string]func(t *testing.T, c *eval.Case) (*apps.App, context.Context){
		"planner": func(t *testing.T, c *eval.Case) (*apps.App, context.Context) {
			g, err := planner.NewGraph(planner.Script(), planner.NewAgency())
			if err != nil {
				t.Fatal(err)
			}
			return &apps.App{Graph: g, Input: func(m string) graph.Update { return planexec.Input(m) }}, ctx
		},
		"scheduler": func(t *testing.T, c *eval.Case) (*apps.App, context.Context) {
			app, err := scheduler.New(ctx, scheduler.Config{Model: scheduler.Script(), Database: filepath.Join(t.TempDir(), "app.db")})
			if err != nil {
				t.Fatal(err)
			}
			return app, apps.WithScope(ctx, c.ID)
		},
		"sqlrouter": func(t *testing.T, c *eval.Case) (*apps.App, context.Context) {
			app, err := sqlrouter.New(ctx, sqlrouter.Config{Model: sqlrouter.Script(), Database: filepath.Join(t.TempDir(), "library.db"), Sample: true})
			if err != nil {
				t.Fatal(err)
			}
			return app, ctx
		},
		"builder": func(t *testing.T, c *eval.Case) (*apps.App, context.Context) {
			app, err := builder.New(ctx, builder.Config{Model: builder.Script()})
			if err != nil {
				t.Fatal(err)
			}
			return app, ctx
		},
	}
	for name, openApp := range open {
		_, cases := readSet(t, name+"/eval/"+name+".jsonl")
		for i := range cases {
			c := &cases[i]
			t.Run(name+"/"+c.ID, func(t *testing.T) {
				app, actx := openApp(t, c)
				if app.Close != nil {
					defer app.Close()
				}
				scoreAll(t, c, drive(t, actx, app.Graph, app.Input(c.Input.Message), c))
			})
		}
	}
}
