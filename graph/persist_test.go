package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

func listAll(t *testing.T, s checkpoint.Saver, thread string) []*checkpoint.Tuple {
	t.Helper()
	var out []*checkpoint.Tuple
	for tup, err := range s.List(context.Background(), checkpoint.Ref{ThreadID: thread}, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tup)
	}
	return out
}

func TestCheckpointPerStep(t *testing.T) {
	b, log := chainAB()
	saver := checkpoint.NewMemory()
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Writes(graph.Append(log, "in")),
		graph.WithCheckpointer(saver), graph.WithThread("t1"))
	if err != nil {
		t.Fatal(err)
	}
	cps := listAll(t, saver, "t1")
	var got []string
	for i, c := range cps {
		got = append(got, fmt.Sprintf("%s %d next=%d", c.Metadata.Source, c.Metadata.Step, len(c.Checkpoint.Next)))
		if i+1 < len(cps) && c.Metadata.Parent != cps[i+1].Ref.ID {
			t.Errorf("checkpoint %d's parent %q is not the one before it", i, c.Metadata.Parent)
		}
	}
	// As LangGraph: the pre-input checkpoint (step -1, START next), then
	// the input applied as step 0.
	want := []string{"loop 2 next=0", "loop 1 next=1", "loop 0 next=1", "input -1 next=1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("checkpoints, newest first (-want +got):\n%s", d)
	}
	if res.Checkpoint.ID != cps[0].Ref.ID {
		t.Errorf("result names checkpoint %q, latest is %q", res.Checkpoint.ID, cps[0].Ref.ID)
	}
	if cps[1].Checkpoint.Next[0].ID != res.Path[1].TaskID() {
		t.Errorf("saved next task ID %q differs from the ID the task ran with %q", cps[1].Checkpoint.Next[0].ID, res.Path[1].TaskID())
	}
}

// A run that fails resumes from its last checkpoint in a fresh run (as in a
// new process): finished steps are not run again, Send payloads survive.
func TestResumeAfterFailure(t *testing.T) {
	items := graph.NewKey[[]string]("items")
	out := graph.NewKey("out", graph.Concat[string]())
	calls := map[string]int{}
	failOnce := true
	build := func() *graph.Graph {
		b := graph.New(items, out)
		b.AddNode("split", func(context.Context, graph.State) (graph.Output, error) {
			calls["split"]++
			return graph.Writes(items.Set([]string{"x", "y", "z"})), nil
		})
		b.AddFanout("split", func(_ context.Context, s graph.State) ([]graph.Target, error) {
			var ts []graph.Target
			for _, it := range items.Get(s) {
				ts = append(ts, graph.Send("work", it))
			}
			return ts, nil
		}, "work")
		graph.AddSendNode(b, "work", func(_ context.Context, _ graph.State, item string) (graph.Output, error) {
			calls["work:"+item]++
			if item == "y" && failOnce {
				failOnce = false
				return nil, errors.New("flaky")
			}
			return graph.Writes(graph.Append(out, strings.ToUpper(item))), nil
		}, graph.Destinations())
		b.SetEntry("split")
		b.AddEdge("work", graph.END)
		return mustCompile(t, b, graph.WithMaxConcurrency(1))
	}
	saver := checkpoint.NewMemory()
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("resume")}
	if _, err := build().Invoke(context.Background(), nil, opts...); err == nil {
		t.Fatal("first run did not fail")
	}
	res, err := build().Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"X", "Y", "Z"}, out.Get(res.State)); d != "" {
		t.Errorf("out (-want +got):\n%s", d)
	}
	if calls["split"] != 1 {
		t.Errorf("split ran %d times; a committed step must not run again", calls["split"])
	}
	if res.Steps != 1 || res.Path[0].Step != 2 {
		t.Errorf("resumed run took %d steps starting at %d; want 1 step, step 2", res.Steps, res.Path[0].Step)
	}
	// Sends that finished before the failure were saved as pending writes
	// and are not run again; only the failed one is.
	if calls["work:x"] != 1 || calls["work:z"] != 1 || calls["work:y"] != 2 {
		t.Errorf("work calls = %v; want x and z once, y twice (failed, then resumed)", calls)
	}
	// The resumed tasks keep the IDs the checkpoint gave them.
	tup, err := saver.Get(context.Background(), checkpoint.Ref{ThreadID: "resume", ID: res.Checkpoint.ID})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := saver.Get(context.Background(), checkpoint.Ref{ThreadID: "resume", ID: tup.Metadata.Parent})
	if err != nil {
		t.Fatal(err)
	}
	var saved, ran []string
	for _, nt := range parent.Checkpoint.Next {
		saved = append(saved, nt.ID)
	}
	for _, p := range res.Path {
		ran = append(ran, p.TaskID())
	}
	for _, id := range ran {
		if !slices.Contains(saved, id) {
			t.Errorf("resumed task %s is not one of the saved next tasks %v", id, saved)
		}
	}
	if len(ran) < 1 || len(saved) != 3 {
		t.Errorf("saved %d next tasks, resumed run executed %d", len(saved), len(ran))
	}
}

// A chat-like thread: each invoke adds input to the saved state. Reducer keys
// are stored as deltas and rebuilt exactly on the next run.
func TestThreadContinuesWithDeltas(t *testing.T) {
	msgs := graph.NewKey("msgs", graph.MergeByID[msg]())
	turns := graph.NewKey("turns", graph.Sum[int]())
	b := graph.New(msgs, turns)
	b.AddNode("reply", func(_ context.Context, s graph.State) (graph.Output, error) {
		m := msgs.Get(s)
		last := m[len(m)-1]
		return graph.Writes(graph.Append(msgs, msg{"r" + last.MsgID, "re: " + last.Text}), turns.Set(1)), nil
	})
	b.SetEntry("reply")
	b.AddEdge("reply", graph.END)
	g := mustCompile(t, b)
	saver := checkpoint.NewMemory()
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("chat")}
	const n = 40
	var want []msg
	for i := range n {
		id := fmt.Sprint(i)
		in := graph.Writes(graph.Append(msgs, msg{id, "hello " + id}))
		if i == n-1 {
			in = append(in, graph.Remove(msgs, "0", "r0"))
		}
		res, err := g.Invoke(context.Background(), in, opts...)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, msg{id, "hello " + id}, msg{"r" + id, "re: hello " + id})
		if i == n-1 {
			want = want[2:]
			if d := cmp.Diff(want, msgs.Get(res.State)); d != "" {
				t.Fatalf("state (-want +got):\n%s", d)
			}
		}
	}
	// A fresh run rebuilds the same state from blobs.
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, msgs.Get(res.State)); d != "" {
		t.Errorf("rebuilt state (-want +got):\n%s", d)
	}
	if turns.Get(res.State) != n || res.Steps != 0 {
		t.Errorf("turns = %d, steps = %d", turns.Get(res.State), res.Steps)
	}
	tup, err := saver.Get(context.Background(), checkpoint.Ref{ThreadID: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[checkpoint.BlobKind]int{}
	for _, bl := range tup.Checkpoint.Blobs {
		if bl.Key == "msgs" {
			kinds[bl.Kind]++
		}
	}
	if kinds[checkpoint.Full] != 1 || kinds[checkpoint.Delta] == 0 {
		t.Errorf("msgs chain has %v; want one full snapshot followed by deltas", kinds)
	}
}

func TestCorruptBlobIsAnErrorNotAZeroValue(t *testing.T) {
	n := graph.NewKey[int]("n")
	b := graph.New(n)
	b.AddNode("a", writeNode(n.Set(7)))
	b.SetEntry("a")
	b.AddEdge("a", graph.END)
	g := mustCompile(t, b)
	saver := &corrupting{Memory: checkpoint.NewMemory()}
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("bad")}
	if _, err := g.Invoke(context.Background(), nil, opts...); err != nil {
		t.Fatal(err)
	}
	saver.corrupt = true
	_, err := g.Invoke(context.Background(), nil, opts...)
	if err == nil || !strings.Contains(err.Error(), `thread "bad"`) || !strings.Contains(err.Error(), `state key "n"`) {
		t.Fatalf("err = %v, want a decode error naming the thread and key", err)
	}
}

type corrupting struct {
	*checkpoint.Memory
	corrupt bool
}

func (c *corrupting) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	tup, err := c.Memory.Get(ctx, ref)
	if err == nil && c.corrupt {
		for i := range tup.Checkpoint.Blobs {
			tup.Checkpoint.Blobs[i].Data = []byte(`"not a number"`)
		}
	}
	return tup, err
}

func TestCheckpointerNeedsThread(t *testing.T) {
	b, _ := chainAB()
	if _, err := mustCompile(t, b).Invoke(context.Background(), nil, graph.WithCheckpointer(checkpoint.NewMemory())); err == nil {
		t.Fatal("a checkpointer without a thread was accepted")
	}
}

// Abort keeps the last committed checkpoint: the aborted step leaves none.
func TestAbortKeepsLastCheckpoint(t *testing.T) {
	log := graph.NewKey("log", graph.Concat[string]())
	ctl := graph.NewControl()
	b := graph.New(log)
	b.AddNode("a", logNode(log, "a"))
	b.AddNode("b", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		ctl.Abort()
		<-ctx.Done()
		return graph.Writes(graph.Append(log, "b")), nil
	})
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", graph.END)
	saver := checkpoint.NewMemory()
	_, err := mustCompile(t, b).Invoke(context.Background(), nil, graph.WithControl(ctl), graph.WithCheckpointer(saver), graph.WithThread("ab"))
	if !errors.Is(err, graph.ErrAborted) {
		t.Fatalf("err = %v", err)
	}
	tup, err := saver.Get(context.Background(), checkpoint.Ref{ThreadID: "ab"})
	if err != nil {
		t.Fatal(err)
	}
	if tup.Metadata.Step != 1 || len(tup.Checkpoint.Next) != 1 || tup.Checkpoint.Next[0].Node != "b" {
		t.Errorf("latest checkpoint: step %d next %+v; want step 1 with b next", tup.Metadata.Step, tup.Checkpoint.Next)
	}
}

// TestParallelStepDeltasReadBack runs steps of parallel Send tasks that
// write a merged map and an appended list (values with characters JSON
// escapes), under each durability, and checks that every checkpoint read
// back from the saver holds the state the run had after that step: the
// step's delta, which takes each write's encoding from its task's pending
// writes, decodes to what the writes did.
func TestParallelStepDeltasReadBack(t *testing.T) {
	results := graph.NewKey("results", graph.MergeMap[string, string]())
	notes := graph.NewKey("notes", graph.Concat[string]())
	rounds := graph.NewKey("rounds", graph.Sum[int]())
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		b := graph.New(results, notes, rounds)
		b.AddNode("fan", func(_ context.Context, s graph.State) (graph.Output, error) {
			r := rounds.Get(s)
			if r == 3 {
				return graph.Command{Goto: []graph.Target{graph.To(graph.END)}}, nil
			}
			var ts []graph.Target
			for i := range 4 {
				ts = append(ts, graph.Send("work", fmt.Sprintf("r%d-%d", r, i)))
			}
			return graph.Command{Goto: ts, Update: graph.Writes(rounds.Set(1))}, nil
		}, graph.Destinations("work", graph.END))
		graph.AddSendNode(b, "work", func(_ context.Context, _ graph.State, id string) (graph.Output, error) {
			return graph.Writes(results.Set(map[string]string{id: "<done> \"" + id + "\" é\n"}), notes.Set([]string{id + " & more"})), nil
		})
		b.SetEntry("fan")
		b.AddEdge("work", "fan")
		g := mustCompile(t, b)
		saver := checkpoint.NewMemory()
		thread := fmt.Sprint("deltas-", d)
		res, err := g.Invoke(context.Background(), nil, graph.WithCheckpointer(saver), graph.WithThread(thread), graph.WithDurability(d))
		if err != nil {
			t.Fatalf("durability %v: %v", d, err)
		}
		if n := len(results.Get(res.State)); n != 12 {
			t.Fatalf("durability %v: %d results, want 12", d, n)
		}
		snap, err := g.GetState(context.Background(), graph.WithCheckpointer(saver), graph.WithThread(thread))
		if err != nil {
			t.Fatalf("durability %v: %v", d, err)
		}
		if diff := cmp.Diff(results.Get(res.State), results.Get(snap.Values)); diff != "" {
			t.Errorf("durability %v: results read back (-run +saved):\n%s", d, diff)
		}
		want := notes.Get(res.State)
		slices.Sort(want)
		got := notes.Get(snap.Values)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("durability %v: notes read back (-run +saved):\n%s", d, diff)
		}
		if d == graph.DurabilityExit {
			continue
		}
		// Every checkpoint of the thread reads back as a state whose
		// results are those of the rounds before it.
		for _, tup := range listAll(t, saver, thread) {
			s, err := g.GetState(context.Background(), graph.WithCheckpointer(saver), graph.WithThread(thread), graph.WithCheckpointID(tup.Checkpoint.ID))
			if err != nil {
				t.Fatalf("durability %v: checkpoint %s: %v", d, tup.Checkpoint.ID, err)
			}
			r := rounds.Get(s.Values)
			if n := len(results.Get(s.Values)); n != 4*r && n != 4*(r-1) {
				t.Errorf("durability %v: checkpoint at round %d holds %d results", d, r, n)
			}
			for id, v := range results.Get(s.Values) {
				if v != "<done> \""+id+"\" é\n" {
					t.Errorf("durability %v: result %s read back as %q", d, id, v)
				}
			}
		}
	}
}
