package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// The cases in this file run every behaviour at the top level, inside a
// subgraph and inside a subgraph of a subgraph, under every durability
// mode: the engine's interrupt, durability and replay paths must not depend
// on depth or mode.

var depths = []int{0, 1, 2}

// atDepth wraps inner in depth layers of subgraph nodes that share its keys
// ("outer", then "inner"), and returns the graph with the path prefix that
// names inner's nodes from the top ("outer/inner/").
func atDepth(t *testing.T, inner *graph.Graph, depth int, keys ...graph.AnyKey) (*graph.Graph, string) {
	t.Helper()
	g, prefix := inner, ""
	names := []string{"inner", "outer"}
	for i := range depth {
		name := names[len(names)-depth+i]
		b := graph.New(keys...)
		b.AddSubgraph(name, g)
		b.SetEntry(name)
		b.AddEdge(name, graph.END)
		g = mustCompile(t, b)
		prefix = name + "/" + prefix
	}
	return g, prefix
}

// eachDepthAndMode runs fn for every depth and durability mode.
func eachDepthAndMode(t *testing.T, fn func(t *testing.T, depth int, mode graph.Durability)) {
	for _, depth := range depths {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("depth%d/%s", depth, mode), func(t *testing.T) {
				fn(t, depth, mode)
			})
		}
	}
}

// forkGraph: a, then b and c in parallel. Each node counts its runs.
func forkGraph(t *testing.T, c *counter, log *graph.Key[[]string], opts ...graph.RunOption) *graph.Graph {
	b := graph.New(log)
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, func(context.Context, graph.State) (graph.Output, error) {
			c.add(n)
			return graph.Writes(graph.Append(log, n)), nil
		})
	}
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("a", "c")
	b.AddEdge("b", graph.END)
	b.AddEdge("c", graph.END)
	return mustCompile(t, b, opts...)
}

func sortedLog(s graph.State, log *graph.Key[[]string]) []string {
	l := slices.Clone(log.Get(s))
	sort.Strings(l)
	return l
}

// Defect 1: a static breakpoint is a pending interrupt like any other: it
// is listed with its ID and kind, and continuing — with no value, a single
// answer or an answer addressed to its ID — passes it exactly once, at
// every depth, whether the breakpoint was compiled into the inner graph or
// given at the top by path.
func TestBreakpointsAreAnswerable(t *testing.T) {
	resumes := map[string]func(in graph.InterruptInfo) graph.RunOption{
		"nil input":   func(graph.InterruptInfo) graph.RunOption { return nil },
		"WithResume":  func(graph.InterruptInfo) graph.RunOption { return graph.WithResume("go on") },
		"resume map":  func(in graph.InterruptInfo) graph.RunOption { return graph.WithResumeMap(map[string]any{in.ID: true}) },
		"resume null": func(graph.InterruptInfo) graph.RunOption { return graph.WithResume(nil) },
	}
	for _, kind := range []graph.InterruptKind{graph.InterruptBefore, graph.InterruptAfter} {
		for _, where := range []string{"compiled", "by path"} {
			for rname, resume := range resumes {
				t.Run(fmt.Sprintf("%s/%s/%s", kind, where, rname), func(t *testing.T) {
					eachDepthAndMode(t, func(t *testing.T, depth int, mode graph.Durability) {
						testBreakpoint(t, depth, mode, kind, where == "by path", resume)
					})
				})
			}
		}
	}
}

func testBreakpoint(t *testing.T, depth int, mode graph.Durability, kind graph.InterruptKind, byPath bool, resume func(graph.InterruptInfo) graph.RunOption) {
	var c counter
	log := graph.NewKey("log", graph.Concat[string]())
	node := "b" // stop before b (b and c run in one step), or after a
	bp := graph.WithInterruptBefore
	if kind == graph.InterruptAfter {
		node, bp = "a", graph.WithInterruptAfter
	}
	var innerOpts []graph.RunOption
	if !byPath {
		innerOpts = append(innerOpts, bp(node))
	}
	g, prefix := atDepth(t, forkGraph(t, &c, log, innerOpts...), depth, log)
	opts := append(threadOpts(checkpoint.NewMemory(), "bp"), graph.WithDurability(mode))
	first := opts
	if byPath {
		first = append(slices.Clone(opts), bp(prefix+node))
	}
	res, err := g.Invoke(context.Background(), nil, first...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("first run: err = %v, interrupts %+v", err, res.Interrupts)
	}
	in := res.Interrupts[0]
	if in.Kind != kind || in.Node != node || !in.Breakpoint() {
		t.Errorf("interrupt = %+v, want a %s breakpoint at %s", in, kind, node)
	}
	// Deeper, the parent sees the subgraph's writes only when it finishes.
	if want := []string{"a"}; depth == 0 && !cmp.Equal(log.Get(res.State), want) {
		t.Errorf("state at the breakpoint: %v", log.Get(res.State))
	}
	snap, err := g.GetState(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Interrupts) != 1 || snap.Interrupts[0].ID != in.ID || snap.Interrupts[0].Kind != kind {
		t.Errorf("snapshot interrupts %+v, want the breakpoint %s", snap.Interrupts, in.ID)
	}
	again := slices.Clone(first)
	if o := resume(in); o != nil {
		again = append(again, o)
	}
	res, err = g.Invoke(context.Background(), nil, again...)
	if err != nil {
		t.Fatalf("resume: %v (interrupts %+v)", err, res.Interrupts)
	}
	if d := cmp.Diff([]string{"a", "b", "c"}, sortedLog(res.State, log)); d != "" {
		t.Errorf("log after resuming (-want +got):\n%s", d)
	}
	for _, n := range []string{"a", "b", "c"} {
		if c.get(n) != 1 {
			t.Errorf("%s ran %d times, want once", n, c.get(n))
		}
	}
	snap, err = g.GetState(context.Background(), opts...)
	if err != nil || len(snap.Interrupts) != 0 || len(snap.Next) != 0 {
		t.Errorf("final snapshot: interrupts %+v next %v err %v", snap.Interrupts, snap.Next, err)
	}
}

// asker interrupts once for a string and logs it.
func asker(c *counter, log *graph.Key[[]string], name string) graph.NodeFunc {
	return func(ctx context.Context, _ graph.State) (graph.Output, error) {
		c.add(name)
		v, err := graph.Interrupt[string](ctx, "value for "+name)
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(log, name+"="+v)), nil
	}
}

// Defect 6: a node that finished in an earlier attempt of a step (before a
// sibling's interrupt stopped the step) is still stopped after when the step
// commits.
func TestInterruptAfterOnReRunStep(t *testing.T) {
	eachDepthAndMode(t, func(t *testing.T, depth int, mode graph.Durability) {
		var c counter
		log := graph.NewKey("log", graph.Concat[string]())
		b := graph.New(log)
		b.AddNode("x", func(context.Context, graph.State) (graph.Output, error) {
			c.add("x")
			return graph.Writes(graph.Append(log, "x")), nil
		})
		b.AddNode("y", asker(&c, log, "y"))
		b.AddNode("z", logNode(log, "z"))
		b.AddEdge(graph.START, "x")
		b.AddEdge(graph.START, "y")
		b.AddJoin("z", "x", "y")
		b.AddEdge("z", graph.END)
		g, prefix := atDepth(t, mustCompile(t, b), depth, log)
		opts := append(threadOpts(checkpoint.NewMemory(), "after"), graph.WithDurability(mode), graph.WithInterruptAfter(prefix+"x"))
		res, err := g.Invoke(context.Background(), nil, opts...)
		if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].Node != "y" {
			t.Fatalf("first run: err = %v, interrupts %+v", err, res.Interrupts)
		}
		res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume("ok"))...)
		if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
			t.Fatalf("after answering y: err = %v, interrupts %+v; want the breakpoint after x", err, res.Interrupts)
		}
		if in := res.Interrupts[0]; in.Node != "x" || in.Kind != graph.InterruptAfter {
			t.Errorf("interrupt = %+v, want after x", in)
		}
		res, err = g.Invoke(context.Background(), nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"x", "y=ok", "z"}, sortedLog(res.State, log)); d != "" {
			t.Errorf("log (-want +got):\n%s", d)
		}
		if c.get("x") != 1 || c.get("y") != 2 {
			t.Errorf("x ran %d times (want 1), y %d (want 2)", c.get("x"), c.get("y"))
		}
	})
}

// Defect 3: UpdateState with no node, while interrupts wait and a sibling
// has been answered, keeps every pending interrupt and every answer.
func TestUpdateStateKeepsPendingInterrupts(t *testing.T) {
	eachDepthAndMode(t, func(t *testing.T, depth int, mode graph.Durability) {
		var c counter
		log := graph.NewKey("log", graph.Concat[string]())
		b := graph.New(log)
		b.AddNode("ask1", asker(&c, log, "ask1"))
		b.AddNode("ask2", asker(&c, log, "ask2"))
		b.AddNode("work", func(context.Context, graph.State) (graph.Output, error) {
			c.add("work")
			return graph.Writes(graph.Append(log, "work")), nil
		})
		for _, n := range []string{"ask1", "ask2", "work"} {
			b.AddEdge(graph.START, n)
			b.AddEdge(n, graph.END)
		}
		g, _ := atDepth(t, mustCompile(t, b), depth, log)
		opts := append(threadOpts(checkpoint.NewMemory(), "upd"), graph.WithDurability(mode))
		res, err := g.Invoke(context.Background(), nil, opts...)
		if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 2 {
			t.Fatalf("err = %v, interrupts %+v", err, res.Interrupts)
		}
		byNode := map[string]string{}
		for _, in := range res.Interrupts {
			byNode[in.Node] = in.ID
		}
		// Answer ask1 only: it finishes, ask2 still waits.
		res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{byNode["ask1"]: "one"}))...)
		if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].ID != byNode["ask2"] {
			t.Fatalf("after answering ask1: err = %v, interrupts %+v", err, res.Interrupts)
		}
		if _, err := g.UpdateState(context.Background(), graph.Writes(graph.Append(log, "edit")), "", opts...); err != nil {
			t.Fatal(err)
		}
		snap, err := g.GetState(context.Background(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Interrupts) != 1 || snap.Interrupts[0].ID != byNode["ask2"] {
			t.Fatalf("after the update: interrupts %+v, want ask2's %s", snap.Interrupts, byNode["ask2"])
		}
		res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume("two"))...)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"ask1=one", "ask2=two", "edit", "work"}, sortedLog(res.State, log)); d != "" {
			t.Errorf("log (-want +got):\n%s", d)
		}
		if c.get("work") != 1 || c.get("ask1") != 2 || c.get("ask2") != 2 {
			t.Errorf("runs: work %d (want 1) ask1 %d (want 2) ask2 %d (want 2)", c.get("work"), c.get("ask1"), c.get("ask2"))
		}
	})
}

// Defect 5: a replay that stops at an interrupt is a branch that can be
// resumed, updated and forked again, and the original branch's checkpoints
// and pending writes stay exactly as they were.
func TestReplayToAnInterruptIsABranch(t *testing.T) {
	eachDepthAndMode(t, func(t *testing.T, depth int, mode graph.Durability) {
		var c counter
		log := graph.NewKey("log", graph.Concat[string]())
		b := graph.New(log)
		b.AddNode("a", logNode(log, "a"))
		b.AddNode("ask", asker(&c, log, "ask"))
		b.AddNode("z", logNode(log, "z"))
		b.SetEntry("a")
		b.AddEdge("a", "ask")
		b.AddEdge("ask", "z")
		b.AddEdge("z", graph.END)
		// At depth 0 the replay starts after a; deeper, the top graph has
		// one step, so the replay starts from its input checkpoint.
		g, _ := atDepth(t, mustCompile(t, b), depth, log)
		saver := checkpoint.NewMemory()
		opts := append(threadOpts(saver, "replay"), graph.WithDurability(mode))
		ctx := context.Background()
		if _, err := g.Invoke(ctx, nil, opts...); !errors.Is(err, graph.ErrInterrupted) {
			t.Fatal(err)
		}
		if _, err := g.Invoke(ctx, nil, append(opts, graph.WithResume("first"))...); err != nil {
			t.Fatal(err)
		}
		before := snapshotSaver(t, saver, "replay")
		hist := listAll(t, saver, "replay")
		from := hist[len(hist)-1] // the oldest: input
		if depth == 0 && mode != graph.DurabilityExit {
			from = hist[len(hist)-2] // after a
		}
		replay := append(slices.Clone(opts), graph.WithCheckpointID(from.Ref.ID))
		res, err := g.Invoke(ctx, nil, replay...)
		if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
			t.Fatalf("replay: err = %v, interrupts %+v", err, res.Interrupts)
		}
		for id, tup := range before {
			got, err := saver.Get(ctx, checkpoint.Ref{ThreadID: "replay", Namespace: tup.Ref.Namespace, ID: id})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tup, got); d != "" {
				t.Errorf("the old branch's checkpoint %s changed (-before +after):\n%s", id, d)
			}
		}
		res, err = g.Invoke(ctx, nil, append(opts, graph.WithResume("second"))...)
		if err != nil {
			t.Fatalf("resuming the branch: %v", err)
		}
		if d := cmp.Diff([]string{"a", "ask=second", "z"}, sortedLog(res.State, log)); d != "" {
			t.Errorf("branch log (-want +got):\n%s", d)
		}
		// The branch can be updated and forked again.
		if _, err := g.UpdateState(ctx, graph.Writes(graph.Append(log, "note")), "", opts...); err != nil {
			t.Fatal(err)
		}
		s, err := g.GetState(ctx, opts...)
		if err != nil || !slices.Contains(log.Get(s.Values), "note") {
			t.Fatalf("after update: %v, %v", s, err)
		}
		if _, err := g.Invoke(ctx, nil, replay...); !errors.Is(err, graph.ErrInterrupted) {
			t.Fatalf("second replay: %v", err)
		}
		res, err = g.Invoke(ctx, nil, append(opts, graph.WithResume("third"))...)
		if err != nil || !slices.Contains(log.Get(res.State), "ask=third") {
			t.Fatalf("second branch: %v, %v", log.Get(res.State), err)
		}
	})
}

// snapshotSaver reads every checkpoint (with its writes) of a thread's root
// namespace.
func snapshotSaver(t *testing.T, s checkpoint.Saver, thread string) map[string]*checkpoint.Tuple {
	out := map[string]*checkpoint.Tuple{}
	for _, tup := range listAll(t, s, thread) {
		out[tup.Ref.ID] = tup
	}
	return out
}

var hexID = regexp.MustCompile(`[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// describeCheckpoint renders a checkpoint for comparison across durability modes:
// IDs are replaced, pending writes are named by their task's node.
func describeCheckpoint(tup *checkpoint.Tuple) string {
	node := map[string]string{}
	var next []string
	for _, ct := range tup.Checkpoint.Next {
		node[ct.ID] = ct.Node
		next = append(next, ct.Node)
	}
	var writes []string
	for _, w := range tup.Writes {
		n, ok := node[w.TaskID]
		if !ok {
			n = "(previous step)"
		}
		writes = append(writes, fmt.Sprintf("%s %s %s", n, w.Key, hexID.ReplaceAllString(string(w.Value), "ID")))
	}
	sort.Strings(writes)
	return fmt.Sprintf("step %d %s next=%v\n  %s", tup.Metadata.Step, tup.Metadata.Source, next, strings.Join(writes, "\n  "))
}

// Defect 2: after several interrupt/resume cycles, the thread's history
// reads the same under every durability mode (steps, sources, Next, pending
// writes); exit only writes fewer intermediate checkpoints.
func TestHistoryIsTheSameInEveryMode(t *testing.T) {
	for _, depth := range depths {
		t.Run(fmt.Sprintf("depth%d", depth), func(t *testing.T) {
			hist := map[graph.Durability][]string{}
			for _, mode := range modes {
				var c counter
				log := graph.NewKey("log", graph.Concat[string]())
				b := graph.New(log)
				b.AddNode("ask", asker(&c, log, "ask"))
				b.AddNode("work", logNode(log, "work"))
				b.AddEdge(graph.START, "ask")
				b.AddEdge(graph.START, "work")
				b.AddConditionalEdges("ask", func(_ context.Context, s graph.State) (string, error) {
					if len(log.Get(s)) < 6 {
						return "again", nil
					}
					return "done", nil
				}, map[string]string{"again": "ask", "done": graph.END})
				b.AddEdge("work", graph.END)
				g, _ := atDepth(t, mustCompile(t, b), depth, log)
				saver := checkpoint.NewMemory()
				opts := append(threadOpts(saver, "cycles"), graph.WithDurability(mode))
				_, err := g.Invoke(context.Background(), nil, opts...)
				var latest []string
				for round := 0; errors.Is(err, graph.ErrInterrupted); round++ {
					if round > 10 {
						t.Fatal("too many rounds")
					}
					tups := listAll(t, saver, "cycles")
					latest = append(latest, describeCheckpoint(tups[0]))
					_, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(fmt.Sprint(round)))...)
				}
				if err != nil {
					t.Fatal(err)
				}
				var all []string
				for _, tup := range listAll(t, saver, "cycles") {
					all = append(all, describeCheckpoint(tup))
				}
				hist[mode] = all
				if mode != graph.DurabilitySync {
					if d := cmp.Diff(hist[graph.DurabilitySync][0], all[0]); d != "" {
						t.Errorf("%s: final checkpoint differs from sync (-sync +%s):\n%s", mode, mode, d)
					}
				}
				// Every checkpoint of any mode is one sync has too.
				for _, h := range all {
					if !slices.Contains(hist[graph.DurabilitySync], h) {
						t.Errorf("%s wrote a checkpoint sync did not:\n%s\nsync history:\n%s", mode, h, strings.Join(hist[graph.DurabilitySync], "\n"))
					}
				}
				if mode == graph.DurabilityAsync && !cmp.Equal(all, hist[graph.DurabilitySync]) {
					t.Errorf("async history differs from sync:\n%s", cmp.Diff(hist[graph.DurabilitySync], all))
				}
				_ = latest
			}
		})
	}
}

// recordingSaver records the namespace and metadata of every Put.
type recordingSaver struct {
	checkpoint.Saver
	mu   sync.Mutex
	puts []checkpoint.Metadata
	nss  []string
}

func (s *recordingSaver) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	s.mu.Lock()
	s.puts = append(s.puts, md)
	s.nss = append(s.nss, ref.Namespace)
	s.mu.Unlock()
	return s.Saver.Put(ctx, ref, cp, md)
}

// Defect 4: subgraphs run with the parent's durability, saver, step limit,
// run ID and breakpoints (by path), unless the subgraph sets its own.
func TestSubgraphsInheritRunOptions(t *testing.T) {
	for _, depth := range []int{1, 2} {
		t.Run(fmt.Sprintf("depth%d", depth), func(t *testing.T) {
			log := graph.NewKey("log", graph.Concat[string]())
			chain := func(opts ...graph.RunOption) *graph.Graph {
				b := graph.New(log)
				names := []string{"s1", "s2", "s3", "s4"}
				for i, n := range names {
					b.AddNode(n, logNode(log, n))
					if i > 0 {
						b.AddEdge(names[i-1], n)
					}
				}
				b.SetEntry("s1")
				b.AddEdge("s4", graph.END)
				return mustCompile(t, b, opts...)
			}
			// Durability: under exit the subgraph namespaces get one
			// checkpoint each, at the end; under sync one per step.
			for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityExit} {
				rec := &recordingSaver{Saver: checkpoint.NewMemory()}
				g, _ := atDepth(t, chain(), depth, log)
				res, err := g.Invoke(context.Background(), nil, graph.WithCheckpointer(rec), graph.WithThread("inherit"), graph.WithDurability(mode), graph.WithRunID("run-1"))
				if err != nil || len(log.Get(res.State)) != 4 {
					t.Fatalf("%s: %v %v", mode, log.Get(res.State), err)
				}
				perNS := map[string]int{}
				for i, md := range rec.puts {
					perNS[rec.nss[i]]++
					if md.RunID != "run-1" {
						t.Errorf("%s: namespace %q checkpoint has run ID %q, want the parent's run-1", mode, rec.nss[i], md.RunID)
					}
				}
				if len(perNS) != depth+1 {
					t.Errorf("%s: %d namespaces written, want %d", mode, len(perNS), depth+1)
				}
				for ns, n := range perNS {
					if mode == graph.DurabilityExit && n != 1 {
						t.Errorf("exit: namespace %q got %d checkpoints, want 1 (the subgraph must inherit exit)", ns, n)
					}
					if mode == graph.DurabilitySync && ns != "" && depth == 1 && n != 5 {
						t.Errorf("sync: namespace %q got %d checkpoints, want 5", ns, n)
					}
				}
			}
			// The step limit flows down unless the subgraph sets its own.
			g, _ := atDepth(t, chain(), depth, log)
			_, err := g.Invoke(context.Background(), nil, graph.WithStepLimit(3))
			var sl *graph.StepLimitError
			if !errors.As(err, &sl) || sl.Limit != 3 || sl.Namespace == "" {
				t.Errorf("step limit 3 in the subgraph: err = %v", err)
			}
			g, _ = atDepth(t, chain(graph.WithStepLimit(10)), depth, log)
			if _, err := g.Invoke(context.Background(), nil, graph.WithStepLimit(3)); err != nil {
				t.Errorf("a subgraph with its own limit: %v", err)
			}
			// Cancellation reaches the subgraph's nodes.
			ctx, cancel := context.WithCancel(context.Background())
			b := graph.New(log)
			b.AddNode("wait", func(ctx context.Context, _ graph.State) (graph.Output, error) {
				cancel()
				<-ctx.Done()
				return nil, ctx.Err()
			})
			b.SetEntry("wait")
			b.AddEdge("wait", graph.END)
			g, _ = atDepth(t, mustCompile(t, b), depth, log)
			if _, err := g.Invoke(ctx, nil); !errors.Is(err, context.Canceled) {
				t.Errorf("cancel: err = %v", err)
			}
		})
	}
}

// Resume answers are never silently empty: nil to a node interrupt is an
// error, a JSON null sent on purpose reaches the node, and an unknown ID
// names what waits.
func TestResumeAnswersAreExplicit(t *testing.T) {
	var c counter
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		v, err := graph.Interrupt[*string](ctx, "anything?")
		if err != nil {
			return nil, err
		}
		c.add("ask")
		return graph.Writes(graph.Append(log, fmt.Sprint(v == nil))), nil
	})
	b.SetEntry("ask")
	b.AddEdge("ask", graph.END)
	g := mustCompile(t, b)
	opts := threadOpts(checkpoint.NewMemory(), "explicit")
	res, err := g.Invoke(context.Background(), nil, opts...)
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	id := res.Interrupts[0].ID
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume(nil))...); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("WithResume(nil): err = %v, want an error", err)
	}
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{id: nil}))...); err == nil {
		t.Error("WithResumeMap with a nil answer: no error")
	}
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{"nope:0": "x"}))...); err == nil || !strings.Contains(err.Error(), id) {
		t.Errorf("unknown ID: err = %v, want it to list %s", err, id)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(json.RawMessage("null")))...)
	if err != nil || !cmp.Equal(log.Get(res.State), []string{"true"}) || c.get("ask") != 1 {
		t.Errorf("a deliberate null: log %v err %v", log.Get(res.State), err)
	}
}
