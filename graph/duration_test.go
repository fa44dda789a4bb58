package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// sleepNode writes 1 to k after sleeping d.
func sleepNode(k *graph.Key[int], d time.Duration) graph.NodeFunc {
	return func(context.Context, graph.State) (graph.Output, error) {
		time.Sleep(d)
		return graph.Writes(k.Set(1)), nil
	}
}

// durations runs g and returns each node's duration in Result.Path.
func durations(t *testing.T, g *graph.Graph, opts ...graph.RunOption) map[string]time.Duration {
	t.Helper()
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	d := map[string]time.Duration{}
	for _, nr := range res.Path {
		d[nr.Node] = nr.Duration
	}
	return d
}

// TestPathDurations checks the durations Result.Path records, in a run
// where one clock reading ends a task and starts the next step's (no
// saver, events, observer or control) and in runs where each task reads
// the clock twice: a slow task's time is its own, a quick task after it
// does not inherit it, and after a parallel step the next task's clock
// starts afresh.
func TestPathDurations(t *testing.T) {
	const slow = 40 * time.Millisecond
	k := graph.NewKey[int]("k", graph.Reduce("sum", func(a, b int) (int, error) { return a + b, nil }))
	b := graph.New(k)
	b.AddNode("slow", sleepNode(k, slow))
	b.AddNode("quick", sleepNode(k, 0))
	b.AddNode("fanA", sleepNode(k, slow))
	b.AddNode("fanB", sleepNode(k, 0))
	b.AddNode("after", sleepNode(k, 0))
	b.SetEntry("slow")
	b.AddEdge("slow", "quick")
	b.AddEdge("quick", "fanA")
	b.AddEdge("quick", "fanB")
	b.AddJoin("after", "fanA", "fanB")
	b.AddEdge("after", graph.END)
	g := mustCompile(t, b)

	saver := checkpoint.NewMemory()
	cases := []struct {
		name string
		opts []graph.RunOption
	}{
		{"carried", nil},
		{"saver", []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("durations")}},
		{"control", []graph.RunOption{graph.WithControl(graph.NewControl())}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := durations(t, g, tc.opts...)
			if d["slow"] < slow || d["fanA"] < slow {
				t.Errorf("slow %v, fanA %v: want each at least %v", d["slow"], d["fanA"], slow)
			}
			// A quick node's duration never holds the slow one's sleep
			// before it (half of it is far more than any quick task
			// takes, under any load this suite meets).
			for _, n := range []string{"quick", "after"} {
				if d[n] >= slow/2 {
					t.Errorf("%s took %v after a %v task: it counted time that was not its own", n, d[n], slow)
				}
			}
		})
	}
}

// TestPathDurationCarriesCommit pins the documented edge of a carried clock
// reading: a task after a one-task step holds that step's commit, a slow
// custom reducer included, when the run has no saver, events, observer or
// control; with a saver it does not.
func TestPathDurationCarriesCommit(t *testing.T) {
	const slowReduce = 30 * time.Millisecond
	k := graph.NewKey[int]("k", graph.Reduce("slow", func(a, b int) (int, error) {
		time.Sleep(slowReduce)
		return a + b, nil
	}))
	other := graph.NewKey[int]("other")
	b := graph.New(k, other)
	b.AddNode("first", sleepNode(k, 0))
	b.AddNode("second", sleepNode(other, 0))
	b.SetEntry("first")
	b.AddEdge("first", "second")
	b.AddEdge("second", graph.END)
	g := mustCompile(t, b)

	if d := durations(t, g); d["second"] < slowReduce {
		t.Errorf("without a saver, second took %v; want the %v commit before it included", d["second"], slowReduce)
	}
	d := durations(t, g, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("commit"))
	if d["second"] >= slowReduce {
		t.Errorf("with a saver, second took %v; its own clock should leave out the %v commit before it", d["second"], slowReduce)
	}
}
