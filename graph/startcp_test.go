package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// headCounter counts the reads of a thread namespace's latest checkpoint
// (Get with an empty ID) that pass through it.
type headCounter struct {
	checkpoint.Saver
	heads atomic.Int64
}

func (h *headCounter) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if ref.ID == "" {
		h.heads.Add(1)
	}
	return h.Saver.Get(ctx, ref)
}

// The worker's pattern: read the head once, hand it to GetState and to the
// run. The run must not read it again and must end exactly as a run that
// reads it itself, pending writes (a finished task's, answered interrupts)
// included.
func TestWithStartCheckpointReusesTheRead(t *testing.T) {
	ctx := context.Background()
	mem := checkpoint.NewMemory()
	var setup counter
	if _, err := parallelGraph(t, &setup).Invoke(ctx, nil, threadOpts(mem, "given")...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("setup: err = %v, want interrupted", err)
	}
	// The head now holds the finished worker's writes beside two interrupts.
	if err := mem.CopyThread(ctx, "given", "read"); err != nil {
		t.Fatal(err)
	}
	saver := &headCounter{Saver: mem}

	type outcome struct {
		values, tasks       []string
		interrupts          int
		asker1, worker      int
		heads               int64
		snapNext, finalNext []string
	}
	resume := func(thread string, withStart bool) outcome {
		t.Helper()
		var c counter
		g := parallelGraph(t, &c)
		opts := threadOpts(saver, thread)
		before := saver.heads.Load()
		if withStart {
			ref := checkpoint.Ref{ThreadID: thread}
			tup, err := saver.Get(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			if len(tup.Writes) == 0 {
				t.Fatal("the head has no pending writes; the test would not cover them")
			}
			opts = append(opts, graph.WithStartCheckpoint(ref, tup))
		}
		snap, err := g.GetState(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		var answer string
		for _, in := range snap.Interrupts {
			if in.Node == "asker1" {
				answer = in.ID
			}
		}
		res, err := g.Invoke(ctx, nil, append(opts, graph.WithResumeMap(map[string]any{answer: "one"}))...)
		if !errors.Is(err, graph.ErrInterrupted) {
			t.Fatalf("%s: err = %v, want interrupted for asker2", thread, err)
		}
		heads := saver.heads.Load() - before
		final, err := g.GetState(ctx, threadOpts(saver, thread)...)
		if err != nil {
			t.Fatal(err)
		}
		var tasks []string
		for _, ts := range final.Tasks {
			tasks = append(tasks, fmt.Sprintf("%s finished=%v writes=%d interrupts=%d", ts.Node, ts.Finished, len(ts.Writes), len(ts.Interrupts)))
		}
		slices.Sort(tasks)
		return outcome{values: results.Get(final.Values), tasks: tasks, interrupts: len(res.Interrupts), asker1: c.get("asker1"),
			worker: c.get("worker"), heads: heads, snapNext: snap.Next, finalNext: final.Next}
	}
	read := resume("read", false)
	given := resume("given", true)
	if read.heads != 2 || given.heads != 1 {
		t.Errorf("head reads: %d without the option (want 2: GetState, the run), %d with it (want 1: the caller's)", read.heads, given.heads)
	}
	read.heads, given.heads = 0, 0
	if d := cmp.Diff(read, given, cmp.AllowUnexported(outcome{})); d != "" {
		t.Errorf("the run from the given checkpoint differs (-read +given):\n%s", d)
	}
	wantTasks := []string{"asker1 finished=true writes=1 interrupts=0", "asker2 finished=false writes=0 interrupts=1", "worker finished=true writes=1 interrupts=0"}
	if d := cmp.Diff(wantTasks, given.tasks); d != "" || given.worker != 0 || given.asker1 != 1 {
		t.Errorf("resume: worker ran %d times (want 0), asker1 %d (want 1); tasks (-want +got):\n%s", given.worker, given.asker1, d)
	}
}

// A nil tuple says the namespace is empty: the run starts fresh without a
// read. A ref of another thread is ignored and the run reads its own head.
func TestWithStartCheckpointEmptyAndOtherThread(t *testing.T) {
	ctx := context.Background()
	b, log := chainAB()
	g := mustCompile(t, b)
	saver := &headCounter{Saver: checkpoint.NewMemory()}
	res, err := g.Invoke(ctx, graph.Writes(graph.Append(log, "in")),
		append(threadOpts(saver, "new"), graph.WithStartCheckpoint(checkpoint.Ref{ThreadID: "new"}, nil))...)
	if err != nil {
		t.Fatal(err)
	}
	if n := saver.heads.Load(); n != 0 {
		t.Errorf("a run told its thread is empty read the head %d times", n)
	}
	want := log.Get(res.State)
	other, err := saver.Get(ctx, checkpoint.Ref{ThreadID: "new"})
	if err != nil {
		t.Fatal(err)
	}
	saver.heads.Store(0)
	res, err = g.Invoke(ctx, graph.Writes(graph.Append(log, "in")),
		append(threadOpts(saver, "fresh"), graph.WithStartCheckpoint(checkpoint.Ref{ThreadID: "new"}, other))...)
	if err != nil {
		t.Fatal(err)
	}
	if n := saver.heads.Load(); n != 1 {
		t.Errorf("a run given another thread's head read its own %d times, want 1", n)
	}
	if d := cmp.Diff(want, log.Get(res.State)); d != "" {
		t.Errorf("a fresh thread's run used another thread's checkpoint (-want +got):\n%s", d)
	}
}

func TestWithStartCheckpointBadInput(t *testing.T) {
	ctx := context.Background()
	b, log := chainAB()
	g := mustCompile(t, b)
	saver := checkpoint.NewMemory()
	if _, err := g.Invoke(ctx, graph.Writes(graph.Append(log, "in")), threadOpts(saver, "t")...); err != nil {
		t.Fatal(err)
	}
	tup, err := saver.Get(ctx, checkpoint.Ref{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		ref  checkpoint.Ref
		want string
	}{
		"tuple of another thread": {checkpoint.Ref{ThreadID: "u"}, "is not of"},
		"ref with an ID":          {tup.Ref, "must name"},
	} {
		_, err := g.GetState(ctx, append(threadOpts(saver, "t"), graph.WithStartCheckpoint(c.ref, tup))...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, c.want)
		}
	}
}
