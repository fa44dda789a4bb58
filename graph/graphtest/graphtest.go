// Package graphtest runs the graph engine's durable-thread cases against a
// checkpoint.Saver, in every durability mode: interrupts and resume, partial
// answers, subgraphs that resume inside, failures that keep finished
// siblings, breakpoints (also inside subgraphs), delta chains, history,
// replay and fork (a replay that stops is a branch), updates that keep
// pending interrupts, commands as run input, stateful subgraphs, the
// run context and durable steps. Every saver
// backend runs it from its own tests, the way LangGraph runs its suite over
// all checkpointers; checkpointtest checks the savers' own contract.
package graphtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// Run runs every case in every durability mode. newSaver is called once per
// case; savers may share storage across calls (each case uses its own
// thread).
func Run(t *testing.T, newSaver func(t *testing.T) checkpoint.Saver) {
	cases := []struct {
		name string
		fn   func(t *testing.T, e env)
	}{
		{"InterruptResume", testInterruptResume},
		{"ParallelPartialAnswers", testParallelPartialAnswers},
		{"AskUntilValid", testAskUntilValid},
		{"SubgraphResumesInside", testSubgraphResumesInside},
		{"FailedStepKeepsFinished", testFailedStepKeepsFinished},
		{"Breakpoints", testBreakpoints},
		{"ChatThreadDeltas", testChatThreadDeltas},
		{"HistoryReplayFork", testHistoryReplayFork},
		{"SubgraphBreakpoint", testSubgraphBreakpoint},
		{"ReplayBranch", testReplayBranch},
		{"UpdateKeepsInterrupt", testUpdateKeepsInterrupt},
		{"CommandInput", testCommandInput},
		{"StatefulAndContext", testStatefulAndContext},
		{"RemoveRun", testRemoveRun},
		{"DurableSteps", testDurableSteps},
	}
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(mode.String(), func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(t, env{saver: newSaver(t), mode: mode, thread: c.name + "-" + checkpoint.NewID()})
				})
			}
		})
	}
}

// env is what a case runs with.
type env struct {
	saver  checkpoint.Saver
	mode   graph.Durability
	thread string
}

func (e env) opts(extra ...graph.RunOption) []graph.RunOption {
	return append([]graph.RunOption{graph.WithCheckpointer(e.saver), graph.WithThread(e.thread), graph.WithDurability(e.mode)}, extra...)
}

// counter counts node executions across parallel tasks.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

var (
	decision = graph.NewKey[string]("decision")
	log      = graph.NewKey("log", graph.Concat[string]())
	age      = graph.NewKey[int]("age")
)

func must(t *testing.T, b *graph.Builder) *graph.Graph {
	t.Helper()
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func wantInterrupted(t *testing.T, res *graph.Result, err error, n int) {
	t.Helper()
	if !errors.Is(err, graph.ErrInterrupted) || res == nil || res.Status != graph.StatusInterrupted || len(res.Interrupts) != n {
		var got []graph.InterruptInfo
		if res != nil {
			got = res.Interrupts
		}
		t.Fatalf("err = %v, interrupts %+v; want %d interrupts", err, got, n)
	}
}

func approval(t *testing.T, c *counter) *graph.Graph {
	b := graph.New(decision)
	b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		c.add("ask")
		ok, err := graph.Interrupt[bool](ctx, map[string]string{"question": "deploy?"})
		if err != nil {
			return nil, err
		}
		return graph.Writes(decision.Set(fmt.Sprint(ok))), nil
	})
	b.AddNode("act", func(context.Context, graph.State) (graph.Output, error) {
		c.add("act")
		return nil, nil
	})
	b.SetEntry("ask")
	b.AddEdge("ask", "act")
	b.AddEdge("act", graph.END)
	return must(t, b)
}

func testInterruptResume(t *testing.T, e env) {
	var c counter
	ctx := context.Background()
	res, err := approval(t, &c).Invoke(ctx, nil, e.opts()...)
	wantInterrupted(t, res, err, 1)
	if string(res.Interrupts[0].Payload) != `{"question":"deploy?"}` || res.Interrupts[0].Node != "ask" {
		t.Errorf("interrupt = %+v", res.Interrupts[0])
	}
	s, err := approval(t, &c).GetState(ctx, e.opts()...)
	if err != nil || len(s.Interrupts) != 1 || s.Interrupts[0].ID != res.Interrupts[0].ID {
		t.Fatalf("thread state: %+v, err %v", s, err)
	}
	// A new graph value, as another process would build.
	res, err = approval(t, &c).Invoke(ctx, nil, e.opts(graph.WithResume(true))...)
	if err != nil {
		t.Fatal(err)
	}
	if decision.Get(res.State) != "true" || c.get("ask") != 2 || c.get("act") != 1 {
		t.Errorf("decision %q, ask %d, act %d", decision.Get(res.State), c.get("ask"), c.get("act"))
	}
}

func parallel(t *testing.T, c *counter) *graph.Graph {
	b := graph.New(log)
	for _, n := range []string{"asker1", "asker2"} {
		b.AddNode(n, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			c.add(n)
			v, err := graph.Interrupt[string](ctx, "value for "+n)
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(log, n+"="+v)), nil
		})
	}
	b.AddNode("worker", func(context.Context, graph.State) (graph.Output, error) {
		c.add("worker")
		return graph.Writes(graph.Append(log, "worked")), nil
	})
	for _, n := range []string{"asker1", "asker2", "worker"} {
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	return must(t, b)
}

func testParallelPartialAnswers(t *testing.T, e env) {
	var c counter
	ctx := context.Background()
	res, err := parallel(t, &c).Invoke(ctx, nil, e.opts()...)
	wantInterrupted(t, res, err, 2)
	ids := map[string]string{}
	for _, in := range res.Interrupts {
		ids[in.Node] = in.ID
	}
	if ids["asker1"] == ids["asker2"] {
		t.Fatalf("parallel interrupts share an ID: %v", ids)
	}
	if _, err := parallel(t, &c).Invoke(ctx, nil, e.opts(graph.WithResume("x"))...); err == nil || !strings.Contains(err.Error(), ids["asker2"]) {
		t.Errorf("one answer for two interrupts: err = %v", err)
	}
	res, err = parallel(t, &c).Invoke(ctx, nil, e.opts(graph.WithResumeMap(map[string]any{ids["asker1"]: "one"}))...)
	wantInterrupted(t, res, err, 1)
	res, err = parallel(t, &c).Invoke(ctx, nil, e.opts(graph.WithResume("two"))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"asker1=one", "asker2=two", "worked"}, log.Get(res.State)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	if c.get("asker1") != 2 || c.get("asker2") != 2 || c.get("worker") != 1 {
		t.Errorf("runs: asker1 %d asker2 %d worker %d", c.get("asker1"), c.get("asker2"), c.get("worker"))
	}
}

func testAskUntilValid(t *testing.T, e env) {
	b := graph.New(age)
	b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		for prompt := "age?"; ; {
			n, err := graph.Interrupt[int](ctx, prompt)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				return graph.Writes(age.Set(n)), nil
			}
			prompt = fmt.Sprintf("%d is not an age", n)
		}
	})
	b.SetEntry("ask")
	b.AddEdge("ask", graph.END)
	g := must(t, b)
	ctx := context.Background()
	res, err := g.Invoke(ctx, nil, e.opts()...)
	wantInterrupted(t, res, err, 1)
	res, err = g.Invoke(ctx, nil, e.opts(graph.WithResume(-1))...)
	wantInterrupted(t, res, err, 1)
	if !strings.HasSuffix(res.Interrupts[0].ID, ":1") || !strings.Contains(string(res.Interrupts[0].Payload), "-1 is not an age") {
		t.Errorf("second question = %+v", res.Interrupts[0])
	}
	res, err = g.Invoke(ctx, nil, e.opts(graph.WithResume(30))...)
	if err != nil || age.Get(res.State) != 30 {
		t.Fatalf("age %d, err %v", age.Get(res.State), err)
	}
}

func testSubgraphResumesInside(t *testing.T, e env) {
	var c counter
	build := func() *graph.Graph {
		sb := graph.New(log)
		sb.AddNode("draft", func(context.Context, graph.State) (graph.Output, error) {
			c.add("draft")
			return graph.Writes(graph.Append(log, "draft")), nil
		})
		sb.AddNode("review", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			c.add("review")
			v, err := graph.Interrupt[string](ctx, "approve?")
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(log, "review:"+v)), nil
		})
		sb.SetEntry("draft")
		sb.AddEdge("draft", "review")
		sb.AddEdge("review", graph.END)
		b := graph.New(log)
		b.AddSubgraph("writer", must(t, sb))
		b.AddNode("publish", func(context.Context, graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(log, "publish")), nil
		})
		b.SetEntry("writer")
		b.AddEdge("writer", "publish")
		b.AddEdge("publish", graph.END)
		return must(t, b)
	}
	ctx := context.Background()
	res, err := build().Invoke(ctx, nil, e.opts()...)
	wantInterrupted(t, res, err, 1)
	if !strings.HasPrefix(res.Interrupts[0].Namespace, "writer:") {
		t.Errorf("namespace %q", res.Interrupts[0].Namespace)
	}
	res, err = build().Invoke(ctx, nil, e.opts(graph.WithResume("yes"))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"draft", "review:yes", "publish"}, log.Get(res.State)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	if c.get("draft") != 1 || c.get("review") != 2 {
		t.Errorf("draft %d review %d: the subgraph must resume, not restart", c.get("draft"), c.get("review"))
	}
}

func testFailedStepKeepsFinished(t *testing.T, e env) {
	var c counter
	fail := true
	build := func() *graph.Graph {
		b := graph.New(log)
		b.AddNode("ok", func(context.Context, graph.State) (graph.Output, error) {
			c.add("ok")
			return graph.Writes(graph.Append(log, "ok")), nil
		})
		b.AddNode("flaky", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			c.add("flaky")
			for c.get("ok") == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			if fail {
				fail = false
				return nil, errors.New("flaky failed")
			}
			return graph.Writes(graph.Append(log, "flaky")), nil
		})
		for _, n := range []string{"ok", "flaky"} {
			b.AddEdge(graph.START, n)
			b.AddEdge(n, graph.END)
		}
		return must(t, b)
	}
	ctx := context.Background()
	if _, err := build().Invoke(ctx, nil, e.opts()...); err == nil {
		t.Fatal("no failure")
	}
	res, err := build().Invoke(ctx, nil, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"flaky", "ok"}, log.Get(res.State)); d != "" || c.get("ok") != 1 {
		t.Errorf("log %v, ok ran %d times (want once)", log.Get(res.State), c.get("ok"))
	}
}

func chain(t *testing.T) *graph.Graph {
	b := graph.New(log)
	for _, n := range []string{"a", "b"} {
		b.AddNode(n, func(context.Context, graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(log, n)), nil
		})
	}
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", graph.END)
	return must(t, b)
}

func testBreakpoints(t *testing.T, e env) {
	ctx := context.Background()
	g := chain(t)
	res, err := g.Invoke(ctx, nil, e.opts(graph.WithInterruptBefore("b"))...)
	wantInterrupted(t, res, err, 1)
	if !cmp.Equal(log.Get(res.State), []string{"a"}) {
		t.Errorf("at the breakpoint: %v", log.Get(res.State))
	}
	if _, err := g.UpdateState(ctx, graph.Writes(graph.Append(log, "edited")), "", e.opts()...); err != nil {
		t.Fatal(err)
	}
	res, err = g.Invoke(ctx, nil, e.opts(graph.WithInterruptBefore("b"))...)
	if err != nil || !cmp.Equal(log.Get(res.State), []string{"a", "edited", "b"}) {
		t.Fatalf("after the breakpoint: %v, err %v", log.Get(res.State), err)
	}
}

// msg is a chat message for the delta-chain case.
type msg struct {
	ID, Text string
}

var history = graph.NewKey("history", graph.MergeByIDFunc(func(m msg) string { return m.ID }))

func testChatThreadDeltas(t *testing.T, e env) {
	b := graph.New(history)
	b.AddNode("reply", func(_ context.Context, s graph.State) (graph.Output, error) {
		h := history.Get(s)
		return graph.Writes(graph.Append(history, msg{"r" + h[len(h)-1].ID, "re: " + h[len(h)-1].Text})), nil
	})
	b.SetEntry("reply")
	b.AddEdge("reply", graph.END)
	g := must(t, b)
	ctx := context.Background()
	const turns = 30
	var want []msg
	for i := range turns {
		id := fmt.Sprint(i)
		in := graph.Writes(graph.Append(history, msg{id, "hello " + id}))
		if i == turns-1 {
			in = append(in, graph.Remove(history, "0", "r0"), graph.Append(history, msg{"1", "edited"}))
		}
		if _, err := g.Invoke(ctx, in, e.opts()...); err != nil {
			t.Fatal(err)
		}
		want = append(want, msg{id, "hello " + id}, msg{"r" + id, "re: hello " + id})
	}
	want = want[2:]
	want[0].Text = "edited"
	want[len(want)-1].Text = "re: hello 29"
	res, err := g.Invoke(ctx, nil, e.opts()...) // rebuilt from the saver
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, history.Get(res.State)); d != "" {
		t.Errorf("rebuilt history (-want +got):\n%s", d)
	}
}

func testHistoryReplayFork(t *testing.T, e env) {
	ctx := context.Background()
	g := chain(t)
	if _, err := g.Invoke(ctx, graph.Writes(graph.Append(log, "in")), e.opts()...); err != nil {
		t.Fatal(err)
	}
	var snaps []*graph.Snapshot
	for s, err := range g.History(ctx, checkpoint.ListOptions{}, e.opts()...) {
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	// The oldest is the pre-input checkpoint: step -1, source input, the
	// state before the input, START next.
	if pre := snaps[len(snaps)-1]; pre.Metadata.Step != -1 || pre.Metadata.Source != checkpoint.SourceInput || len(log.Get(pre.Values)) != 0 || !cmp.Equal(pre.Next, []string{graph.START}) {
		t.Errorf("pre-input checkpoint: step %d source %s values %v next %v", pre.Metadata.Step, pre.Metadata.Source, log.Get(pre.Values), pre.Next)
	}
	if e.mode == graph.DurabilityExit {
		if len(snaps) != 2 {
			t.Fatalf("exit mode saved %d checkpoints, want 2 (pre-input and last)", len(snaps))
		}
		return // no intermediate checkpoint to replay or fork from
	}
	if len(snaps) != 4 || !cmp.Equal(snaps[1].Next, []string{"b"}) {
		t.Fatalf("history: %d snapshots, second next %v", len(snaps), snaps[1].Next)
	}
	afterA := snaps[1].Checkpoint.ID
	res, err := g.Invoke(ctx, nil, e.opts(graph.WithCheckpointID(afterA))...)
	if err != nil || !cmp.Equal(log.Get(res.State), []string{"in", "a", "b"}) {
		t.Fatalf("replay: %v, err %v", log.Get(res.State), err)
	}
	if _, err := g.UpdateState(ctx, graph.Writes(graph.Append(log, "forked")), "a", e.opts(graph.WithCheckpointID(afterA))...); err != nil {
		t.Fatal(err)
	}
	res, err = g.Invoke(ctx, nil, e.opts()...)
	if err != nil || !cmp.Equal(log.Get(res.State), []string{"in", "a", "forked", "b"}) {
		t.Fatalf("fork: %v, err %v", log.Get(res.State), err)
	}
	old, err := g.GetState(ctx, e.opts(graph.WithCheckpointID(snaps[0].Checkpoint.ID))...)
	if err != nil || !cmp.Equal(log.Get(old.Values), []string{"in", "a", "b"}) {
		t.Errorf("the old branch changed: %v, err %v", log.Get(old.Values), err)
	}
}
