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
					got := map[string][]string{} // namespace → the agent node's update
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

// checkpointOf finds the checkpoint of the thread's run with topic tp at
// which that run had applied its input (input true: its next task is
// "agent") or had finished.
func checkpointOf(t *testing.T, g *graph.Graph, run []graph.RunOption, tp string, input bool) string {
	t.Helper()
	for s, err := range g.History(context.Background(), checkpoint.ListOptions{}, run...) {
		if err != nil {
			t.Fatal(err)
		}
		if topic2.Get(s.Values) == tp && (len(s.Next) == 1 && s.Next[0] == "agent") == input && (len(s.Next) == 0) == !input {
			return s.Checkpoint.ID
		}
	}
	t.Fatalf("no checkpoint for %q (input %v)", tp, input)
	return ""
}

// Replaying a thread from an older checkpoint — or running new input from
// one, or from a fork of one — gives a Stateful subgraph the state it had
// at that checkpoint, not its newest: the abandoned branch's memory does
// not leak into the new branch, which then goes on from its own (as
// LangGraph's subgraph replay loads the subgraph's latest checkpoint
// before the replayed one). At one and two Stateful levels, in every
// durability mode (DurabilityExit saves no checkpoint inside a run, so it
// has nothing to replay from but a run's end).
func TestStatefulSubgraphFollowsTheBranch(t *testing.T) {
	for _, how := range []string{"replay", "input", "fork"} {
		for _, depth := range []int{1, 2} {
			for _, mode := range modes {
				t.Run(fmt.Sprintf("%s/depth%d/%s", how, depth, mode), func(t *testing.T) {
					if how == "replay" && mode == graph.DurabilityExit {
						t.Skip("no checkpoint inside a run to replay from")
					}
					var c counter
					log := graph.NewKey("log", graph.Concat[string]())
					g := statefulAt(t, &c, log, depth)
					run := append(threadOpts(checkpoint.NewMemory(), "branch"), graph.WithDurability(mode))
					for _, tp := range []string{"owls", "bats", "cats"} {
						if _, err := g.Invoke(context.Background(), graph.Writes(topic2.Set(tp)), run...); err != nil {
							t.Fatal(err)
						}
					}
					owlsEnd := checkpointOf(t, g, run, "owls", false)
					var res *graph.Result
					var err error
					topic := "rats"
					switch how {
					case "replay": // the bats run again, from its input
						topic = "bats"
						res, err = g.Invoke(context.Background(), nil, append(run, graph.WithCheckpointID(checkpointOf(t, g, run, "bats", true)))...)
					case "input": // another second run
						res, err = g.Invoke(context.Background(), graph.Writes(topic2.Set(topic)), append(run, graph.WithCheckpointID(owlsEnd))...)
					case "fork": // a fork with another second input, then a plain run
						if _, err := g.UpdateState(context.Background(), graph.Writes(topic2.Set(topic)), graph.START, append(run, graph.WithCheckpointID(owlsEnd))...); err != nil {
							t.Fatal(err)
						}
						res, err = g.Invoke(context.Background(), nil, run...)
					}
					if err != nil {
						t.Fatal(err)
					}
					want := fmt.Sprintf("%s: seen [owls %s]", topic, topic)
					if d := cmp.Diff([]string{"owls: seen [owls]", want}, log.Get(res.State)); d != "" {
						t.Errorf("after the %s (-want +got):\n%s", how, d)
					}
					// The new branch goes on from its own memory.
					res, err = g.Invoke(context.Background(), graph.Writes(topic2.Set("dogs")), run...)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := log.Get(res.State), fmt.Sprintf("dogs: seen [owls %s dogs]", topic); len(got) != 3 || got[2] != want {
						t.Errorf("the run after the %s: log %v, want it to end with %q", how, got, want)
					}
				})
			}
		}
	}
}
