package graph_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
)

// cmdGraph: ask (interrupts, and records whether it saw "cmd" in the log)
// and, in parallel, flaky (fails while *failing is set); extra is reached
// only by a command's goto.
func cmdGraph(t *testing.T, c *counter, log *graph.Key[[]string], failing *atomic.Bool) *graph.Graph {
	b := graph.New(log)
	b.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Output, error) {
		c.add("ask")
		v, err := graph.Interrupt[string](ctx, "ok?")
		if err != nil {
			return nil, err
		}
		saw := "ask=" + v
		if slices.Contains(log.Get(s), "cmd") {
			saw += "(saw cmd)"
		}
		return graph.Writes(graph.Append(log, saw)), nil
	})
	b.AddNode("flaky", func(context.Context, graph.State) (graph.Output, error) {
		c.add("flaky")
		if failing.Load() {
			return nil, errors.New("flaky failed")
		}
		return graph.Writes(graph.Append(log, "flaky")), nil
	}, graph.Destinations("extra")) // only so that extra counts as reachable
	b.AddNode("extra", func(context.Context, graph.State) (graph.Output, error) {
		c.add("extra")
		return graph.Writes(graph.Append(log, "extra")), nil
	})
	b.AddEdge(graph.START, "ask")
	b.AddEdge(graph.START, "flaky")
	b.AddEdge("ask", graph.END)
	b.AddEdge("flaky", graph.END)
	b.AddEdge("extra", graph.END)
	return mustCompile(t, b)
}

// A command answers the interrupt, updates the state the resumed node
// reads and runs its goto target, all in one step and one checkpoint.
func TestCommandInputIsOneStep(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			var c counter
			var failing atomic.Bool
			log := graph.NewKey("log", graph.Concat[string]())
			g := cmdGraph(t, &c, log, &failing)
			saver := checkpoint.NewMemory()
			opts := append(threadOpts(saver, "cmd"), graph.WithDurability(mode))
			if _, err := g.Invoke(context.Background(), nil, opts...); !errors.Is(err, graph.ErrInterrupted) {
				t.Fatal(err)
			}
			before := len(listAll(t, saver, "cmd"))
			res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume("yes"),
				graph.WithCommand(graph.Command{Update: graph.Writes(graph.Append(log, "cmd")), Goto: []graph.Target{graph.To("extra")}}))...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"ask=yes(saw cmd)", "cmd", "extra", "flaky"}, sortedLog(res.State, log)); d != "" {
				t.Errorf("log (-want +got):\n%s", d)
			}
			if len(res.Path) != 2 || res.Path[0].Step != res.Path[1].Step {
				t.Errorf("path %+v: want ask and extra in one step", res.Path)
			}
			// The run adopts the interrupted checkpoint (a "resume" copy
			// under its own run ID), then the command's step commits once.
			after := listAll(t, saver, "cmd")
			if n := len(after) - before; n != 2 || after[0].Metadata.Source != checkpoint.SourceLoop || after[1].Metadata.Source != checkpoint.SourceResume {
				t.Errorf("%d new checkpoints (%s, %s), want a resume copy and one for the command's step", n, after[1].Metadata.Source, after[0].Metadata.Source)
			}
			if c.get("flaky") != 1 || c.get("extra") != 1 {
				t.Errorf("flaky ran %d times, extra %d", c.get("flaky"), c.get("extra"))
			}
		})
	}
}

// On a finished thread a command is a step of its own: its goto runs, an
// update alone runs nothing; an unknown goto is an error that changes
// nothing.
func TestCommandInputOnAFinishedThread(t *testing.T) {
	var c counter
	var failing atomic.Bool
	log := graph.NewKey("log", graph.Concat[string]())
	g := cmdGraph(t, &c, log, &failing)
	saver := checkpoint.NewMemory()
	opts := threadOpts(saver, "done")
	if _, err := g.Invoke(context.Background(), nil, opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume("y"))...); err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithCommand(graph.Command{Update: graph.Writes(graph.Append(log, "note"))}))...)
	if err != nil || !slices.Contains(log.Get(res.State), "note") || len(res.Path) != 0 {
		t.Fatalf("update alone: log %v path %v err %v", log.Get(res.State), res.Path, err)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithCommand(graph.Command{Goto: []graph.Target{graph.To("extra")}}))...)
	if err != nil || len(res.Path) != 1 || res.Path[0].Node != "extra" {
		t.Fatalf("goto extra: path %+v err %v", res.Path, err)
	}
	n := len(listAll(t, saver, "done"))
	_, err = g.Invoke(context.Background(), nil, append(opts, graph.WithCommand(graph.Command{Goto: []graph.Target{graph.To("extar")}}))...)
	if err == nil || !strings.Contains(err.Error(), `"extar"`) || !strings.Contains(err.Error(), "extra") {
		t.Errorf("unknown goto: err = %v, want it named with a suggestion", err)
	}
	if len(listAll(t, saver, "done")) != n {
		t.Error("a rejected command wrote checkpoints")
	}
	if _, err := g.Invoke(context.Background(), graph.Writes(graph.Append(log, "x")), append(opts, graph.WithCommand(graph.Command{}))...); err == nil {
		t.Error("a command with an input: no error")
	}
}

// A command's update and goto are saved as pending writes: when its step
// fails (a stand-in for a crash), resuming without the command still
// applies it exactly once, on the SQLite saver.
func TestCommandInputSurvivesAFailedStep(t *testing.T) {
	var c counter
	var failing atomic.Bool
	log := graph.NewKey("log", graph.Concat[string]())
	g := cmdGraph(t, &c, log, &failing)
	saver, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cmd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { saver.Close() })
	opts := threadOpts(saver, "crash")
	failing.Store(true)
	if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
		t.Fatal("first run: no error")
	}
	// The step failed before ask's interrupt was saved? ask ran in
	// parallel; it is interrupted or cancelled. Answer whatever waits.
	_, err = g.Invoke(context.Background(), nil, append(opts, graph.WithCommand(graph.Command{Update: graph.Writes(graph.Append(log, "cmd")), Goto: []graph.Target{graph.To("extra")}}))...)
	if err == nil {
		t.Fatal("the command's step: no error while flaky fails")
	}
	failing.Store(false)
	res, err := g.Invoke(context.Background(), nil, opts...)
	for i := 0; errors.Is(err, graph.ErrInterrupted) && i < 3; i++ {
		res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume("yes"))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"ask=yes(saw cmd)", "cmd", "extra", "flaky"}, sortedLog(res.State, log)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	if c.get("extra") != 1 {
		t.Errorf("extra ran %d times, want once", c.get("extra"))
	}
}

// UpdateState as END ends the run; with a command's goto it chooses what
// runs next.
func TestUpdateStateAsEndAndWithGoto(t *testing.T) {
	var c counter
	var failing atomic.Bool
	log := graph.NewKey("log", graph.Concat[string]())
	g := cmdGraph(t, &c, log, &failing)
	saver := checkpoint.NewMemory()
	opts := threadOpts(saver, "end")
	ctx := context.Background()
	if _, err := g.Invoke(ctx, nil, opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	if _, err := g.UpdateState(ctx, graph.Writes(graph.Append(log, "closed")), graph.END, opts...); err != nil {
		t.Fatal(err)
	}
	s, err := g.GetState(ctx, opts...)
	if err != nil || len(s.Next) != 0 || len(s.Interrupts) != 0 || !slices.Contains(log.Get(s.Values), "closed") {
		t.Fatalf("after END: next %v interrupts %v values %v err %v", s.Next, s.Interrupts, log.Get(s.Values), err)
	}
	res, err := g.Invoke(ctx, nil, opts...)
	if err != nil || len(res.Path) != 0 {
		t.Errorf("resuming an ended thread ran %v (err %v)", res.Path, err)
	}
	if _, err := g.UpdateState(ctx, nil, "", append(opts, graph.WithCommand(graph.Command{Update: graph.Writes(graph.Append(log, "reopen")), Goto: []graph.Target{graph.To("extra")}}))...); err != nil {
		t.Fatal(err)
	}
	s, err = g.GetState(ctx, opts...)
	if err != nil || !cmp.Equal(s.Next, []string{"extra"}) || !slices.Contains(log.Get(s.Values), "reopen") {
		t.Fatalf("after goto: next %v values %v err %v", s.Next, log.Get(s.Values), err)
	}
	res, err = g.Invoke(ctx, nil, opts...)
	if err != nil || len(res.Path) != 1 || res.Path[0].Node != "extra" {
		t.Errorf("after the goto update: path %+v err %v", res.Path, err)
	}
	if _, err := g.UpdateState(ctx, nil, graph.END, append(opts, graph.WithCommand(graph.Command{Goto: []graph.Target{graph.To("extra")}}))...); err == nil {
		t.Error("END with a goto: no error")
	}
}

// A command's Send may carry its payload as JSON, decoded into the node's
// payload type; a payload that does not fit is an error naming the node.
func TestCommandSendJSON(t *testing.T) {
	log := graph.NewKey("log", graph.Concat[string]())
	type job struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	b := graph.New(log)
	b.AddNode("start", logNode(log, "start"), graph.Destinations("work"))
	graph.AddSendNode(b, "work", func(_ context.Context, _ graph.State, j job) (graph.Output, error) {
		return graph.Writes(graph.Append(log, fmt.Sprintf("%s*%d", j.Name, j.N))), nil
	})
	b.SetEntry("start")
	b.AddEdge("start", graph.END)
	b.AddEdge("work", graph.END)
	g := mustCompile(t, b)
	res, err := g.Invoke(context.Background(), nil, graph.WithCommand(graph.Command{Goto: []graph.Target{graph.SendJSON("work", []byte(`{"name":"x","n":3}`))}}))
	if err != nil || !cmp.Equal(log.Get(res.State), []string{"x*3"}) {
		t.Fatalf("log %v err %v", log.Get(res.State), err)
	}
	_, err = g.Invoke(context.Background(), nil, graph.WithCommand(graph.Command{Goto: []graph.Target{graph.SendJSON("work", []byte(`{"n":"three"}`))}}))
	if err == nil || !strings.Contains(err.Error(), `"work"`) {
		t.Errorf("bad payload: err = %v", err)
	}
}
