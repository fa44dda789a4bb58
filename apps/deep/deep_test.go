package deep_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"

	agentdeep "github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/deep"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/eval"
	_ "github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

func open(t *testing.T, model llm.Model) *apps.App {
	t.Helper()
	app, err := deep.New(context.Background(), deep.Config{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	return app
}

// readFile reads a file of the thread's virtual filesystem.
func readFile(t *testing.T, st store.Store, thread, path string) (string, error) {
	t.Helper()
	it, err := st.Get(context.Background(), []string{"deep_files", "threads", thread}, path)
	if err != nil {
		return "", err
	}
	var f struct {
		Content string `json:"content"`
	}
	err = json.Unmarshal(it.Value, &f)
	return f.Content, err
}

func TestDemoPlaysEveryPart(t *testing.T) {
	for _, approve := range []bool{true, false} {
		ctx := context.Background()
		app := open(t, deep.Script())
		st := store.NewMemory()
		opts := append([]graph.RunOption{graph.WithStore(st), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("demo")}, app.Options...)
		res, err := app.Graph.Invoke(ctx, app.Input(""), opts...)
		if !errors.Is(err, graph.ErrInterrupted) {
			t.Fatalf("the demo should ask before saving the brief: %v", err)
		}
		req, ok := tool.ApprovalFrom(res.Interrupts[0])
		if !ok || req.Tool != agentdeep.WriteFileTool || !strings.Contains(string(req.Arguments), deep.Brief) {
			t.Fatalf("interrupt %+v", res.Interrupts)
		}
		// The researcher's notes were written without asking, to the
		// thread's filesystem the agent shares with it.
		if notes, err := readFile(t, st, "demo", deep.Notes); err != nil || notes != deep.NotesText {
			t.Errorf("notes %q (%v)", notes, err)
		}
		decision := tool.Approve()
		if !approve {
			decision = tool.Reject("not yet")
		}
		res, err = app.Graph.Invoke(ctx, nil, append(opts, graph.WithResume(decision))...)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := react.Answer(res.State)
		brief, berr := readFile(t, st, "demo", deep.Brief)
		if approve {
			if answer != deep.DeliveredText || brief != deep.BriefText {
				t.Errorf("approved: answer %q, brief %q (%v)", answer, brief, berr)
			}
			out := app.Outcome(ctx, res.State)
			if strings.Count(out, "[completed]") != 3 || !strings.Contains(out, deep.DeliveredText) {
				t.Errorf("outcome:\n%s", out)
			}
		} else if !strings.HasPrefix(answer, deep.NotSavedText) || !errors.Is(berr, store.ErrNotFound) {
			t.Errorf("rejected: answer %q, brief %v", answer, berr)
		}
		var calls []string
		for _, m := range react.Messages.Get(res.State) {
			for _, c := range m.ToolCalls {
				calls = append(calls, c.Name)
			}
		}
		if got := strings.Join(calls, ","); !strings.HasPrefix(got, "write_todos,load_skill,write_todos,task,read_file,write_todos,write_file") {
			t.Errorf("calls %s", got)
		}
	}
}

func TestEntryOpensWithSettings(t *testing.T) {
	e := deep.Entry()
	if err := e.Check(json.RawMessage(`{"shared_files": "yes"}`)); err == nil {
		t.Error("a bad setting passes Check")
	}
	if err := e.Check(json.RawMessage(`{"instruction": "x"}`)); err == nil || !strings.Contains(err.Error(), "instruction") {
		t.Errorf("a misspelt setting: %v", err)
	}
	app, err := e.Open(context.Background(), apps.Env{Model: e.Script(), Settings: json.RawMessage(`{"instructions": "Be brief.", "shared_files": true}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if app.Name != deep.Name || app.Graph == nil {
		t.Errorf("app %+v", app)
	}
}

func target(t *testing.T, model llm.Model) *eval.GraphTarget {
	app := open(t, model)
	return &eval.GraphTarget{Graph: app.Graph, Saver: checkpoint.NewMemory(),
		Options: append([]graph.RunOption{graph.WithStore(store.NewMemory())}, app.Options...),
		Message: func(m string) (graph.Update, error) { return app.Input(m), nil }}
}

func runSet(t *testing.T, model llm.Model) *eval.Experiment {
	t.Helper()
	ds, err := eval.LoadDataset("eval/deep.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := (&eval.Runner{Target: target(t, model), Experiment: "apps-deep", Concurrency: 2}).Run(context.Background(), ds)
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func TestEvalSetPassesOnTheScriptedModel(t *testing.T) {
	exp := runSet(t, deep.Script())
	if len(exp.Cases) < 4 {
		t.Fatalf("%d cases", len(exp.Cases))
	}
	for _, c := range exp.Cases {
		if !c.Pass {
			t.Errorf("%s fails on the scripted model: %+v", c.ID, c.Trials)
		}
	}
}

// liar is the scripted model made to claim the brief was saved when the
// person rejected the write, and to skip the research: the set must
// catch both.
type liar struct{ llm.Model }

var lie = strings.NewReplacer("Nothing was saved", "The brief is saved in /brief.md; nothing else", `"subagent_type":"researcher"`, `"subagent_type":"general-purpose"`)

func (l liar) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := l.Model.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *resp
	out.Message = resp.Message.Clone()
	for i, p := range out.Message.Parts {
		if p.Type == llm.PartText {
			out.Message.Parts[i].Text = lie.Replace(p.Text)
		}
	}
	for i, c := range out.Message.ToolCalls {
		out.Message.ToolCalls[i].Arguments = lie.Replace(c.Arguments)
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
		c := llm.Chunk{Text: resp.Message.Text(), Usage: &resp.Usage, FinishReason: resp.FinishReason, Model: resp.Model}
		for i, tc := range resp.Message.ToolCalls {
			c.ToolCalls = append(c.ToolCalls, llm.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		yield(c, nil)
	}
}

func TestEvalSetFailsABrokenModel(t *testing.T) {
	exp := runSet(t, liar{deep.Script()})
	caught := map[string]bool{"rejected-write-not-claimed": false, "delegates-and-reads-the-notes": false}
	for _, c := range exp.Cases {
		if _, ok := caught[c.ID]; ok {
			caught[c.ID] = !c.Pass
		}
	}
	for id, ok := range caught {
		if !ok {
			t.Errorf("%s passes on a model that lies", id)
		}
	}
}

// TestEvalSetFollowsTheScript ties the set to the scripted texts, so a
// change of one fails here rather than in an eval run.
func TestEvalSetFollowsTheScript(t *testing.T) {
	ds, err := eval.LoadDataset("eval/deep.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"brief-saved": deep.DeliveredText, "out-of-scope": deep.Scope}
	for _, c := range ds.Cases {
		if c.ID != "out-of-scope" && c.Input.Message != deep.Task {
			t.Errorf("%s: input %q is not the app's Task", c.ID, c.Input.Message)
		}
		if w, ok := want[c.ID]; ok {
			var got string
			if err := json.Unmarshal(c.Expect.Output, &got); err != nil || got != w {
				t.Errorf("%s: expected output %q, want the script's %q", c.ID, got, w)
			}
		}
	}
}
