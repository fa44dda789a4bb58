package llmtest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

var answers = graph.NewKey("answers", graph.MergeMap[string, string]())

// askTwice is a node that calls the model twice through llm.Call and
// records both replies under "namespace-prefix/node".
func askTwice(m llm.Model) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Output, error) {
		var got string
		for _, q := range []string{"first question", "second question"} {
			resp, err := llm.Call(ctx, m, &llm.Request{Messages: []llm.Message{llm.User(q)}})
			if err != nil {
				return nil, err
			}
			got += resp.Message.Text() + ";"
		}
		where := graph.NodeName(ctx)
		if graph.Namespace(ctx) != "" {
			where = "sub/" + where
		}
		return graph.Writes(answers.Set(map[string]string{where: got})), nil
	}
}

// scripted returns a model whose replies depend on node and namespace
// only, and a graph running three parallel nodes plus a subgraph whose own
// node has the same name as one of them.
func scripted(t *testing.T) (*llmtest.Model, *graph.Graph) {
	m := llmtest.New(llmtest.WithChunkSize(3))
	m.When(llmtest.Namespace("inner:"), llmtest.Text("in-1"), llmtest.Text("in-2"))
	m.When(llmtest.Node("alpha"), llmtest.Text("a-1"), llmtest.Text("a-2"))
	m.When(llmtest.Node("beta"), llmtest.Reasoning("hmm", "b-1"), llmtest.Text("b-2"))
	m.When(llmtest.And(llmtest.Node("gamma"), llmtest.LastUserContains("first")), llmtest.Text("g-first"))
	m.When(llmtest.Node("gamma"), llmtest.Text("g-other")).Repeat()

	sb := graph.New(answers)
	sb.AddNode("alpha", askTwice(m)) // same name as the parent's node
	sb.SetEntry("alpha")
	sb.AddEdge("alpha", graph.END)
	sub, err := sb.Compile()
	if err != nil {
		t.Fatal(err)
	}

	b := graph.New(answers)
	for _, n := range []string{"alpha", "beta", "gamma"} {
		b.AddNode(n, askTwice(m))
		b.SetEntry(n)
		b.AddEdge(n, graph.END)
	}
	b.AddSubgraph("inner", sub)
	b.SetEntry("inner")
	b.AddEdge("inner", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return m, g
}

var wantAnswers = map[string]string{
	"alpha":     "a-1;a-2;",
	"beta":      "b-1;b-2;",
	"gamma":     "g-first;g-other;",
	"sub/alpha": "in-1;in-2;",
}

func TestParallelNodesGetTheirReplies(t *testing.T) {
	for range 20 {
		m, g := scripted(t)
		res, err := g.Invoke(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantAnswers, answers.Get(res.State)); d != "" {
			t.Fatalf("answers (-want +got):\n%s", d)
		}
		reqs := m.Requests()
		if len(reqs) != 8 || m.Pending() != 0 {
			t.Fatalf("%d requests, %d replies pending; want 8 and 0", len(reqs), m.Pending())
		}
		nodes := map[string]int{}
		for _, r := range reqs {
			if r.Streamed || r.TaskID == "" {
				t.Errorf("request %d: streamed %v, task %q; want Generate from a task", r.N, r.Streamed, r.TaskID)
			}
			key := r.Node
			if r.Namespace != "" {
				key = "sub/" + key
			}
			nodes[key]++
		}
		if d := cmp.Diff(map[string]int{"alpha": 2, "beta": 2, "gamma": 2, "sub/alpha": 2}, nodes); d != "" {
			t.Errorf("requests per node (-want +got):\n%s", d)
		}
	}
}

func TestStreamedGraphRun(t *testing.T) {
	m, g := scripted(t)
	tokens := map[string]string{}
	reasoning := map[string]string{}
	var final graph.State
	for ev, err := range g.Stream(t.Context(), nil, graph.WithEvents(graph.EventMessages|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventMessages:
			if ev.Message.Part == graph.PartReasoning {
				reasoning[ev.Node] += ev.Message.Text
			} else {
				tokens[ev.Namespace+"|"+ev.Node] += ev.Message.Text
			}
		case graph.EventValues:
			if ev.Namespace == "" {
				final = ev.State
			}
		}
	}
	if d := cmp.Diff(wantAnswers, answers.Get(final)); d != "" {
		t.Errorf("answers (-want +got):\n%s", d)
	}
	if tokens["|beta"] != "b-1b-2" || reasoning["beta"] != "hmm" {
		t.Errorf("beta streamed %q with reasoning %q", tokens["|beta"], reasoning["beta"])
	}
	if !slices.ContainsFunc(m.Requests(), func(r llmtest.Request) bool { return r.Streamed }) {
		t.Error("no request was streamed though the run streams messages")
	}
}
