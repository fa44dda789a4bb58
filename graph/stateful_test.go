package graph_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
)

var (
	subSeen = graph.NewKey("sub_seen", graph.Concat[string]()) // the subgraph's own key
	topic2  = graph.NewKey[string]("topic2")
)

// memoryAgent remembers every topic it was invoked with in its own key and
// reports how many it has seen into the shared log. ask, when set, makes it
// interrupt after remembering; fail makes its last node fail while set.
func memoryAgent(t *testing.T, c *counter, log *graph.Key[[]string], ask bool, fail *atomic.Bool) *graph.Graph {
	b := graph.New(subSeen, topic2, log)
	b.AddNode("remember", func(_ context.Context, s graph.State) (graph.Output, error) {
		c.add("remember")
		return graph.Writes(graph.Append(subSeen, topic2.Get(s))), nil
	})
	b.AddNode("report", func(ctx context.Context, s graph.State) (graph.Output, error) {
		if ask {
			if _, err := graph.Interrupt[string](ctx, "report?"); err != nil {
				return nil, err
			}
		}
		if fail != nil && fail.Load() {
			return nil, errors.New("report failed")
		}
		return graph.Writes(graph.Append(log, fmt.Sprintf("%s: seen %v", topic2.Get(s), subSeen.Get(s)))), nil
	})
	b.SetEntry("remember")
	b.AddEdge("remember", "report")
	b.AddEdge("report", graph.END)
	return mustCompile(t, b)
}

func agentParent(t *testing.T, sub *graph.Graph, log *graph.Key[[]string], opts ...graph.NodeOption) *graph.Graph {
	b := graph.New(topic2, log)
	b.AddSubgraph("agent", sub, opts...)
	b.SetEntry("agent")
	b.AddEdge("agent", graph.END)
	return mustCompile(t, b)
}

// A Stateful subgraph remembers its own state across its parent's runs on
// a thread; a default one starts fresh each time.
func TestStatefulSubgraphRemembers(t *testing.T) {
	for _, mode := range modes {
		for _, stateful := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stateful=%v", mode, stateful), func(t *testing.T) {
				var c counter
				log := graph.NewKey("log", graph.Concat[string]())
				var opts []graph.NodeOption
				if stateful {
					opts = append(opts, graph.Stateful())
				}
				g := agentParent(t, memoryAgent(t, &c, log, false, nil), log, opts...)
				run := append(threadOpts(checkpoint.NewMemory(), "mem"), graph.WithDurability(mode))
				var res *graph.Result
				for _, tp := range []string{"owls", "bats", "cats"} {
					var err error
					if res, err = g.Invoke(context.Background(), graph.Writes(topic2.Set(tp)), run...); err != nil {
						t.Fatal(err)
					}
				}
				want := []string{"owls: seen [owls]", "bats: seen [bats]", "cats: seen [cats]"}
				if stateful {
					want = []string{"owls: seen [owls]", "bats: seen [owls bats]", "cats: seen [owls bats cats]"}
				}
				if d := cmp.Diff(want, log.Get(res.State)); d != "" {
					t.Errorf("log (-want +got):\n%s", d)
				}
			})
		}
	}
}

// An invocation of a Stateful subgraph that stopped at an interrupt is
// resumed where it stopped, and the next invocation starts from its end.
func TestStatefulSubgraphResumesItsInvocation(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			var c counter
			log := graph.NewKey("log", graph.Concat[string]())
			g := agentParent(t, memoryAgent(t, &c, log, true, nil), log, graph.Stateful())
			run := append(threadOpts(checkpoint.NewMemory(), "mem"), graph.WithDurability(mode))
			for i, tp := range []string{"owls", "bats"} {
				if _, err := g.Invoke(context.Background(), graph.Writes(topic2.Set(tp)), run...); !errors.Is(err, graph.ErrInterrupted) {
					t.Fatalf("invocation %d: %v", i, err)
				}
				if _, err := g.Invoke(context.Background(), nil, append(run, graph.WithResume("ok"))...); err != nil {
					t.Fatal(err)
				}
			}
			s, err := g.GetState(context.Background(), run...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"owls: seen [owls]", "bats: seen [owls bats]"}, log.Get(s.Values)); d != "" {
				t.Errorf("log (-want +got):\n%s", d)
			}
			if c.get("remember") != 2 {
				t.Errorf("remember ran %d times, want once per invocation", c.get("remember"))
			}
		})
	}
}

// A Stateful subgraph whose invocation failed midway (a stand-in for a
// crash) resumes that invocation, on SQLite: its finished node does not run
// again and nothing is remembered twice.
func TestStatefulSubgraphSurvivesAFailedStep(t *testing.T) {
	saver, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { saver.Close() })
	var c counter
	var fail atomic.Bool
	log := graph.NewKey("log", graph.Concat[string]())
	g := agentParent(t, memoryAgent(t, &c, log, false, &fail), log, graph.Stateful())
	run := threadOpts(saver, "mem")
	if _, err := g.Invoke(context.Background(), graph.Writes(topic2.Set("owls")), run...); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if _, err := g.Invoke(context.Background(), graph.Writes(topic2.Set("bats")), run...); err == nil {
		t.Fatal("no error")
	}
	fail.Store(false)
	res, err := g.Invoke(context.Background(), nil, run...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"owls: seen [owls]", "bats: seen [owls bats]"}, log.Get(res.State)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	if c.get("remember") != 2 {
		t.Errorf("remember ran %d times, want 2", c.get("remember"))
	}
}

// The state and history of a subgraph invocation are readable by namespace
// while the parent waits and after it finished, two levels deep.
func TestStateByNamespace(t *testing.T) {
	var c counter
	log := graph.NewKey("log", graph.Concat[string]())
	inner := memoryAgent(t, &c, log, true, nil)
	mid := agentParent(t, inner, log) // node "agent" runs inner
	top := agentParent(t, mid, log)   // node "agent" runs mid
	saver := checkpoint.NewMemory()
	run := threadOpts(saver, "ns")
	res, err := top.Invoke(context.Background(), graph.Writes(topic2.Set("owls")), run...)
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	ns := res.Interrupts[0].Namespace // agent:…|agent:…
	read := func() *graph.Snapshot {
		t.Helper()
		s, err := top.GetState(context.Background(), append(run, graph.WithNamespace(ns))...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := read(); !cmp.Equal(subSeen.Get(s.Values), []string{"owls"}) || len(s.Interrupts) != 1 {
		t.Errorf("while waiting: seen %v interrupts %v", subSeen.Get(s.Values), s.Interrupts)
	}
	if _, err := top.Invoke(context.Background(), nil, append(run, graph.WithResume("ok"))...); err != nil {
		t.Fatal(err)
	}
	s := read()
	if !cmp.Equal(subSeen.Get(s.Values), []string{"owls"}) || len(s.Next) != 0 || !cmp.Equal(log.Get(s.Values), []string{"owls: seen [owls]"}) {
		t.Errorf("after the parent finished: seen %v next %v log %v", subSeen.Get(s.Values), s.Next, log.Get(s.Values))
	}
	n := 0
	for h, err := range top.History(context.Background(), checkpoint.ListOptions{}, append(run, graph.WithNamespace(ns))...) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		_ = h
	}
	if n < 3 {
		t.Errorf("the inner namespace has %d checkpoints in its history, want at least 3", n)
	}
	// The namespace is found from the parent's history too.
	var found string
	for h, err := range top.History(context.Background(), checkpoint.ListOptions{}, run...) {
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range h.Tasks {
			if ts.Namespace != "" {
				found = ts.Namespace
			}
		}
	}
	if found == "" || !strings.HasPrefix(ns, found+"|") {
		t.Errorf("task namespace %q from history, want the prefix of %q", found, ns)
	}
	if _, err := top.GetState(context.Background(), append(run, graph.WithNamespace("agnet:x"))...); err == nil || !strings.Contains(err.Error(), "agent") {
		t.Errorf("unknown namespace: err = %v", err)
	}
}
