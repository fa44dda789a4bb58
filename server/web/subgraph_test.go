package web_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// nestedGraph runs "prepare", then the subgraph node "work", whose inner
// "think" node answers with the gated model: a run held inside a subgraph.
func nestedGraph(gate <-chan struct{}) runs.GraphSpec {
	return runs.GraphSpec{Description: "a subgraph held by the test's gate", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		in := graph.New(react.Messages)
		in.AddNode("think", func(ctx context.Context, s graph.State) (graph.Output, error) {
			resp, err := llm.Call(ctx, gatedModel{gate: gate}, &llm.Request{Messages: react.Messages.Get(s)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(react.Messages, resp.Message)), nil
		})
		in.SetEntry("think")
		in.AddEdge("think", graph.END)
		sub, err := in.Compile()
		if err != nil {
			return nil, err
		}
		b := graph.New(react.Messages)
		b.AddNode("prepare", func(context.Context, graph.State) (graph.Output, error) { return nil, nil })
		b.AddSubgraph("work", sub)
		b.SetEntry("prepare")
		b.AddEdge("prepare", "work")
		b.AddEdge("work", graph.END)
		return b.Compile()
	}}
}

// While a subgraph's node runs, the graph (drawn at the top level) marks
// the node that runs the subgraph, and the status line names the path.
func TestBrowserGraphSubgraphNode(t *testing.T) {
	b := newBrowser(t)
	gate := make(chan struct{})
	open := true
	t.Cleanup(func() {
		if open {
			close(gate)
		}
	})
	url := serve(t, func(s register) error { return s.Register("nested", nestedGraph(gate)) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("nested")
	b.waitFor("the graph", `document.querySelectorAll('#graph .graph-node').length === 4`)
	b.send("think inside")
	b.waitFor("the subgraph's node", `document.querySelector('#graph .graph-node[data-node=work]').classList.contains('in-subgraph')`)
	got := eval[string](b, `[...document.querySelectorAll('#graph .graph-node.active')].map((n) => n.dataset.node).join(',') + '|' + document.getElementById('graph-running').textContent`)
	if got != "work|Running: work › think" {
		t.Errorf("highlighted nodes|status line = %q, want work|Running: work › think", got)
	}
	// The subgraph's tokens stream into the chat while it is held.
	b.waitFor("the subgraph's half reply", `document.getElementById('live').innerText.includes('The first half streams')`)
	b.screenshot("graph-subgraph")
	b.checkA11y("subgraph running")
	close(gate)
	open = false
	b.waitFor("the answer", `document.getElementById('messages').innerText.includes('then the gate opens')`)
	b.waitFor("the run's end", `!document.body.classList.contains('running')`)
	if n := eval[int](b, `document.querySelectorAll('#graph .graph-node.active, #graph .graph-node.in-subgraph').length`); n != 0 {
		t.Errorf("%d nodes still marked after the run", n)
	}
}
