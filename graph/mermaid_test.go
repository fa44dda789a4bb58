package graph_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

func TestMermaid(t *testing.T) {
	subB := graph.New()
	subB.AddNode("step", writeNode())
	subB.SetEntry("step")
	subB.AddEdge("step", graph.END)
	sub := mustCompile(t, subB)

	route := func(context.Context, graph.State) (string, error) { return "", nil }
	bad := graph.New()
	bad.AddFanout("x", nil, "y")
	if _, err := bad.Compile(); err == nil {
		t.Fatal("a nil fan-out function was accepted")
	}
	b := graph.New()
	b.AddNode("agent", writeNode())
	b.AddNode("tools", writeNode())
	b.AddNode("review", writeNode(), graph.Destinations("agent", graph.END))
	b.AddNode("left", writeNode())
	b.AddNode("right", writeNode())
	b.AddNode("merge", writeNode(), graph.Deferred())
	graph.AddSendNode(b, "work", func(context.Context, graph.State, int) (graph.Output, error) { return nil, nil })
	b.AddSubgraph("research", sub)
	b.SetEntry("agent")
	b.AddConditionalEdges("agent", route, map[string]string{"call": "tools", "done": "review", "stop": "review"})
	b.AddEdge("tools", "research")
	b.AddFanout("research", func(context.Context, graph.State) ([]graph.Target, error) { return nil, nil }, "work")
	b.AddEdge("research", "left")
	b.AddEdge("research", "right")
	b.AddJoin("merge", "left", "right")
	b.AddEdge("merge", "agent")
	b.AddEdge("work", "merge")
	got := mustCompile(t, b).Mermaid()
	want := `flowchart TD
  __start__([START])
  agent["agent"]
  left["left"]
  merge["merge (deferred)"]
  subgraph research["research"]
    research____start__([START])
    research__step["step"]
    research____end__([END])
    research____start__ --> research__step
    research__step --> research____end__
  end
  review["review"]
  right["right"]
  tools["tools"]
  work["work (per Send)"]
  __end__([END])
  __start__ --> agent
  agent -->|"call"| tools
  agent -->|"done / stop"| review
  merge --> agent
  research --> left
  research --> right
  research -.->|fan-out| work
  review -.->|goto| __end__
  review -.->|goto| agent
  tools --> research
  work --> merge
  left & right -->|join| merge
`
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("mermaid (-want +got):\n%s", d)
	}
}
