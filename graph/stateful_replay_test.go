package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// statefulAt puts memoryAgent behind depth Stateful subgraph nodes named
// "agent": at depth 1 the top graph runs it, at depth 2 a Stateful middle
// graph that the top graph runs.
func statefulAt(t *testing.T, c *counter, log *graph.Key[[]string], depth int) *graph.Graph {
	g := memoryAgent(t, c, log, false, nil)
	for range depth {
		g = agentParent(t, g, log, graph.Stateful())
	}
	return g
}

// A Stateful subgraph's updates event carries the writes of its own
// invocation only, never an earlier invocation's, in every durability mode
// and when the subgraph is itself inside a Stateful subgraph.
func TestStatefulSubgraphUpdatesAreItsOwn(t *testing.T) {
	for _, depth := range []int{1, 2} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("depth%d/%s", depth, mode), func(t *testing.T) {
				var c counter
				log := graph.NewKey("log", graph.Concat[string]())
				g := statefulAt(t, &c, log, depth)
				run := append(threadOpts(checkpoint.NewMemory(), "upd"), graph.WithDurability(mode), graph.WithEvents(graph.EventUpdates))
				for _, tp := range []string{"owls", "bats", "cats"} {
					var got map[string][]string // namespace depth → the agent node's update
					got = map[string][]string{}
					for ev, err := range g.Stream(context.Background(), graph.Writes(topic2.Set(tp)), run...) {
						if err != nil {
							t.Fatal(err)
						}
						if ev.Node != "agent" {
							continue
						}
						var ws []string
						for _, w := range ev.Update {
							ws = append(ws, w.String())
						}
						got[ev.Namespace] = append(got[ev.Namespace], ws...)
					}
					seen := map[string]string{"owls": "[owls]", "bats": "[owls bats]", "cats": "[owls bats cats]"}[tp]
					want := []string{fmt.Sprintf("set log [%s: seen %s]", tp, seen)}
					if len(got) != depth {
						t.Fatalf("%s: updates of agent nodes in namespaces %v, want %d", tp, got, depth)
					}
					for ns, ws := range got {
						if d := cmp.Diff(want, ws); d != "" {
							t.Errorf("%s: the update of agent in namespace %q (-want +got):\n%s", tp, ns, d)
						}
					}
				}
			})
		}
	}
}
