package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

var (
	kwLog = graph.NewKey("log", graph.Concat[string]())
	kwWho = graph.NewKey[string]("who")
)

type kwCtx struct {
	User string `json:"user"`
	Lang string `json:"lang"`
}

// kwGraph: ask1 and ask2 interrupt in parallel (each logs its answer and
// the run context's user); work takes a Send payload.
func kwGraph(t *testing.T) *graph.Graph {
	b := graph.New(kwLog, kwWho)
	for _, n := range []string{"ask1", "ask2"} {
		b.AddNode(n, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			v, err := graph.Interrupt[string](ctx, "value for "+n)
			if err != nil {
				return nil, err
			}
			rc, _ := graph.RunContext[kwCtx](ctx)
			return graph.Writes(graph.Append(kwLog, fmt.Sprintf("%s=%s(%s/%s)", n, v, rc.User, rc.Lang))), nil
		})
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	graph.AddSendNode(b, "work", func(_ context.Context, _ graph.State, n int) (graph.Output, error) {
		return graph.Writes(graph.Append(kwLog, fmt.Sprint("work*", n))), nil
	})
	b.AddEdge("work", graph.END)
	b.AddNode("later", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(kwLog, "later")), nil
	}, graph.Destinations("work"))
	b.AddEdge(graph.START, "later")
	b.AddEdge("later", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func run(t *testing.T, g *graph.Graph, saver checkpoint.Saver, kw Kwargs, assistantCtx string) (*graph.Result, error) {
	t.Helper()
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("t")}
	var waiting []graph.InterruptInfo
	if s, err := g.GetState(context.Background(), opts...); err == nil {
		waiting = s.Interrupts
	}
	var actx json.RawMessage
	if assistantCtx != "" {
		actx = json.RawMessage(assistantCtx)
	}
	p, err := PlanRun(g, kw, waiting, actx, nil)
	if err != nil {
		return nil, err
	}
	return g.Invoke(context.Background(), p.Input, append(opts, p.Options...)...)
}

// A run's request — input, resume by ID, a command's update and goto with
// a JSON Send, the run context merged from the assistant, the config and
// the request — reaches the graph as the API means it.
func TestPlanRunEndToEnd(t *testing.T) {
	g := kwGraph(t)
	saver := checkpoint.NewMemory()
	res, err := run(t, g, saver, Kwargs{
		Input:   json.RawMessage(`{"who":"ada","log":["in"]}`),
		Config:  json.RawMessage(`{"configurable":{"user":"cfg","lang":"en"},"recursion_limit":10}`),
		Context: json.RawMessage(`{"user":"ada"}`),
	}, `{"lang":"xx","user":"default"}`)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 2 {
		t.Fatalf("first run: %v %+v", err, res)
	}
	ids := map[string]string{}
	for _, in := range res.Interrupts {
		ids[in.Node] = in.ID
	}
	// One answer for two waiting interrupts is refused, naming them.
	_, err = run(t, g, saver, Kwargs{Command: &Command{Resume: json.RawMessage(`"x"`)}}, "")
	var ie *InputError
	if !errors.As(err, &ie) || ie.Pointer != "/command/resume" || !strings.Contains(ie.Detail, ids["ask1"]) {
		t.Fatalf("ambiguous resume: %v", err)
	}
	// Answers by ID, with an update and a goto that sends JSON to a node.
	res, err = run(t, g, saver, Kwargs{Command: &Command{
		Resume: json.RawMessage(fmt.Sprintf(`{%q:"one",%q:"two"}`, ids["ask1"], ids["ask2"])),
		Update: json.RawMessage(`[["log",["upd"]]]`),
		Goto:   json.RawMessage(`[{"node":"work","input":7}]`),
	}}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"in", "upd", "ask1=one(ada/en)", "ask2=two(ada/en)", "later", "work*7"} // one step, in task order
	if d := cmp.Diff(want, kwLog.Get(res.State)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
}

func TestPlanRunErrorsNameTheField(t *testing.T) {
	g := kwGraph(t)
	cases := []struct {
		kw      Kwargs
		pointer string
		detail  string
	}{
		{Kwargs{Input: json.RawMessage(`{"lgo":[]}`)}, "/input", `"lgo"`},
		{Kwargs{Input: json.RawMessage(`{"who":7}`)}, "/input", `input key "who"`},
		{Kwargs{Input: json.RawMessage(`{}`), Command: &Command{Goto: json.RawMessage(`"work"`)}}, "/command", "either input or command"},
		{Kwargs{Command: &Command{}}, "/command", "empty"},
		{Kwargs{Command: &Command{Resume: json.RawMessage(`"x"`)}}, "/command/resume", "no interrupt waiting"},
		{Kwargs{Command: &Command{Goto: json.RawMessage(`"wrok"`)}}, "/command/goto", `no node "wrok"`},
		{Kwargs{Command: &Command{Goto: json.RawMessage(`["later", {"node":"nope"}]`)}}, "/command/goto/1/node", `no node "nope"`},
		{Kwargs{Command: &Command{Goto: json.RawMessage(`[7]`)}}, "/command/goto/0", "node name or a Send"},
		{Kwargs{Command: &Command{Update: json.RawMessage(`[[1,2]]`)}}, "/command/update/0/0", "state key"},
		{Kwargs{Config: json.RawMessage(`{"recursion_limit":0}`)}, "/config/recursion_limit", "at least 1"},
		{Kwargs{Context: json.RawMessage(`[1]`)}, "/context", "JSON object"},
		{Kwargs{Durability: "often"}, "/durability", "sync, async or exit"},
	}
	for _, c := range cases {
		_, err := PlanRun(g, c.kw, nil, nil, nil)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Pointer != c.pointer || !strings.Contains(ie.Detail, c.detail) {
			t.Errorf("%+v: err = %v, want %s naming %s", c.kw, err, c.pointer, c.detail)
		}
	}
}

// An answer that does not fit the interrupt's schema is refused before the
// run starts, naming what was expected.
func TestResumeCheckedAgainstTheSchema(t *testing.T) {
	waiting := []graph.InterruptInfo{{ID: "t:0", Node: "ask", Kind: graph.InterruptNode, Schema: json.RawMessage(`{"anyOf":[{"type":"boolean"},{"type":"string","enum":["approve","reject"]}]}`)}}
	g := kwGraph(t)
	for _, good := range []string{`true`, `"approve"`, `{"t:0":false}`} {
		if _, err := PlanRun(g, Kwargs{Command: &Command{Resume: json.RawMessage(good)}}, waiting, nil, nil); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for bad, pointer := range map[string]string{`"maybe"`: "/command/resume", `{"t:0":7}`: "/command/resume/t:0"} {
		_, err := PlanRun(g, Kwargs{Command: &Command{Resume: json.RawMessage(bad)}}, waiting, nil, nil)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Pointer != pointer || !strings.Contains(ie.Detail, "expects") || !strings.Contains(ie.Detail, "approve") {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

// LangChain front ends answer every waiting tool approval with one
// un-keyed {"decisions": [...]}: with one decision per approval, the i-th
// answers the i-th interrupt in the thread's order; with any other count
// nothing is guessed and the 422 names the interrupts.
func TestUnkeyedDecisionsAnswerApprovalsInOrder(t *testing.T) {
	b := graph.New(kwLog)
	for _, n := range []string{"call1", "call2"} {
		b.AddNode(n, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			v, err := graph.Interrupt[json.RawMessage](ctx, map[string]string{"kind": "tool_approval", "tool": n})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(kwLog, n+"="+string(v))), nil
		})
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory()
	if _, err := run(t, g, saver, Kwargs{Input: json.RawMessage(`{}`)}, ""); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("first run: %v", err)
	}
	_, err = run(t, g, saver, Kwargs{Command: &Command{Resume: json.RawMessage(`{"decisions":[{"type":"approve"}]}`)}}, "")
	var ie *InputError
	if !errors.As(err, &ie) || ie.Pointer != "/command/resume" || !strings.Contains(ie.Detail, "2 interrupts are waiting") {
		t.Fatalf("one decision for two approvals: %v", err)
	}
	res, err := run(t, g, saver, Kwargs{Command: &Command{Resume: json.RawMessage(`{"decisions":[{"type":"approve"},{"type":"reject","message":"no"}]}`)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`call1={"decisions":[{"type":"approve"}]}`, `call2={"decisions":[{"type":"reject","message":"no"}]}`}
	if d := cmp.Diff(want, kwLog.Get(res.State)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
}
