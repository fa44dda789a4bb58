package guide_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/trellis-agents/trellis/graph"
)

// The state of the graph: typed keys, declared once.
var (
	Name     = graph.NewKey[string]("name")
	Greeting = graph.NewKey[string]("greeting")
)

// Example_gettingStarted builds a two-node graph, runs it and reads the
// final state (page 01-getting-started.md).
func Example_gettingStarted() {
	b := graph.New(Name, Greeting)
	b.AddNode("greet", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(Greeting.Set("hello, " + Name.Get(s))), nil
	})
	b.AddNode("shout", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(Greeting.Set(strings.ToUpper(Greeting.Get(s)) + "!")), nil
	})
	b.SetEntry("greet")
	b.AddEdge("greet", "shout")
	b.AddEdge("shout", graph.END)

	g, err := b.Compile()
	if err != nil {
		log.Fatal(err) // lists every problem of the graph at once
	}
	res, err := g.Invoke(context.Background(), graph.Writes(Name.Set("trellis")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(Greeting.Get(res.State))
	fmt.Println("steps:", res.Steps)
	for _, run := range res.Path {
		fmt.Println("ran:", run.Node)
	}
	// Output:
	// HELLO, TRELLIS!
	// steps: 2
	// ran: greet
	// ran: shout
}

// Example_compileErrors shows that Compile reports every mistake of a
// graph at once.
func Example_compileErrors() {
	b := graph.New(Name)
	b.AddNode("a", func(ctx context.Context, s graph.State) (graph.Output, error) { return nil, nil })
	b.AddNode("orphan", func(ctx context.Context, s graph.State) (graph.Output, error) { return nil, nil })
	b.SetEntry("a")
	b.AddEdge("a", "b") // there is no node "b"
	_, err := b.Compile()
	fmt.Println(err)
	// Output:
	// graph does not compile:
	//   - edge a -> b: unknown node "b" (did you mean "a"?)
	//   - node "a" has no outgoing edge: add b.AddEdge("a", graph.END) or declare its Goto targets with graph.Destinations
	//   - node "orphan" has no outgoing edge: add b.AddEdge("orphan", graph.END) or declare its Goto targets with graph.Destinations
	//   - no path from START reaches ["orphan"]: connect them or remove them
}
