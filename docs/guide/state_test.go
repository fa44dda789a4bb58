package guide_test

import (
	"context"
	"fmt"
	"log"

	"github.com/trellis-agents/trellis/graph"
)

// Finding is a list item with an ID, so the MergeByID reducer can replace
// or remove it.
type Finding struct {
	Key  string
	Text string
}

// ID identifies the finding for graph.MergeByID.
func (f Finding) ID() string { return f.Key }

// The keys of the research graph, each with the reducer that merges its
// writes.
var (
	Topic    = graph.NewKey[string]("topic")                           // LastValue (default): one writer per step
	Notes    = graph.NewKey("notes", graph.Concat[string]())           // parallel writes appended in task order
	Visits   = graph.NewKey("visits", graph.Sum[int]())                // writes are added
	Findings = graph.NewKey("findings", graph.MergeByID[Finding]())    // same ID replaces, new ID appends
	Sources  = graph.NewKey("sources", graph.Default([]string{"web"})) // Get returns the default until written
)

// Example_stateAndReducers fans out one task per source (graph.Send), lets
// the parallel tasks write the same keys, and shows how each reducer merges
// their writes (page 02-state.md).
func Example_stateAndReducers() {
	b := graph.New(Topic, Notes, Visits, Findings, Sources)
	b.AddNode("plan", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(Sources.Set([]string{"papers", "blogs", "forums"})), nil
	})
	// One "read" task per source, all in the same step, each with its own
	// typed payload.
	b.AddFanout("plan", func(ctx context.Context, s graph.State) ([]graph.Target, error) {
		var ts []graph.Target
		for _, src := range Sources.Get(s) {
			ts = append(ts, graph.Send("read", src))
		}
		return ts, nil
	}, "read")
	graph.AddSendNode(b, "read", func(ctx context.Context, s graph.State, source string) (graph.Output, error) {
		return graph.Writes(
			graph.Append(Notes, source+" on "+Topic.Get(s)),
			Visits.Set(1),
			graph.Append(Findings, Finding{Key: "summary", Text: "from " + source}),
		), nil
	})
	b.AddEdge("read", "review")
	b.AddNode("review", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(
			graph.Append(Findings, Finding{Key: "verdict", Text: "enough sources"}),
			graph.Remove(Findings, "summary"), // by ID
		), nil
	})
	b.AddEdge("review", graph.END)
	b.SetEntry("plan")
	g, err := b.Compile()
	if err != nil {
		log.Fatal(err)
	}

	res, err := g.Invoke(context.Background(), graph.Writes(Topic.Set("tides")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("notes:", Notes.Get(res.State)) // in Send order, whatever order the tasks finished in
	fmt.Println("visits:", Visits.Get(res.State))
	fmt.Println("findings:", Findings.Get(res.State))
	// Output:
	// notes: [papers on tides blogs on tides forums on tides]
	// visits: 3
	// findings: [{verdict enough sources}]
}

// Example_lastValueConflict shows the error two parallel writes to a
// LastValue key give: their order would be arbitrary, so the step fails
// and the message says to add a reducer.
func Example_lastValueConflict() {
	b := graph.New(Topic)
	for _, n := range []string{"left", "right"} {
		b.AddNode(n, func(ctx context.Context, s graph.State) (graph.Output, error) {
			return graph.Writes(Topic.Set(n)), nil
		})
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	g, err := b.Compile()
	if err != nil {
		log.Fatal(err)
	}
	_, err = g.Invoke(context.Background(), nil)
	fmt.Println(err)
	// Output:
	// graph: step 1: last-value key "topic" was written by both "left" and "right"; only one node may write it per step (their order would be arbitrary), or give the key a reducer such as graph.Concat
}
