package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// batchCounter is an in-memory saver that counts its Put and PutBatch
// calls, and fails its next PutBatch when fail is set.
type batchCounter struct {
	*checkpoint.Memory
	mu      sync.Mutex
	puts    int
	batches [][]checkpoint.Entry
	fail    error
}

func (b *batchCounter) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	b.mu.Lock()
	b.puts++
	b.mu.Unlock()
	return b.Memory.Put(ctx, ref, cp, md)
}

func (b *batchCounter) PutBatch(ctx context.Context, ref checkpoint.Ref, es []checkpoint.Entry) (checkpoint.Ref, error) {
	b.mu.Lock()
	b.batches = append(b.batches, es)
	err := b.fail
	b.fail = nil
	b.mu.Unlock()
	if err != nil {
		return checkpoint.Ref{}, err
	}
	return b.Memory.PutBatch(ctx, ref, es)
}

// plainSaver hides every method but checkpoint.Saver's: the engine writes
// each checkpoint with its own Put, as without the fold.
type plainSaver struct{ checkpoint.Saver }

// normalThread reads every checkpoint of thread (newest first, with its
// pending writes) as JSON, with each checkpoint and task ID replaced by
// its order of first appearance, the versions' tags (drawn from those IDs)
// and the creation times dropped: two runs
// of one graph on one input then read the same, byte for byte, exactly
// when they stored the same checkpoints, parents, blobs and writes.
func normalThread(t *testing.T, s checkpoint.Saver, thread string) string {
	t.Helper()
	var tups []*checkpoint.Tuple
	for tup, err := range s.List(context.Background(), checkpoint.Ref{ThreadID: thread}, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		tups = append(tups, tup)
	}
	var ids []string
	for i := len(tups) - 1; i >= 0; i-- {
		tup := tups[i]
		tup.Checkpoint.Created = time.Time{}
		// A version's low half is a tag drawn from a checkpoint ID.
		for k, v := range tup.Checkpoint.Versions {
			tup.Checkpoint.Versions[k] = v >> 32
		}
		for i := range tup.Checkpoint.Blobs {
			tup.Checkpoint.Blobs[i].Version >>= 32
			tup.Checkpoint.Blobs[i].Base >>= 32
		}
		ids = append(ids, tup.Ref.ID, tup.Metadata.RunID)
		for _, n := range tup.Checkpoint.Next {
			ids = append(ids, n.ID)
		}
		for _, w := range tup.Writes {
			ids = append(ids, w.TaskID)
		}
	}
	b, err := json.MarshalIndent(tups, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	seen := map[string]bool{}
	for i, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = strings.ReplaceAll(out, id, fmt.Sprintf("id-%d", i))
		}
	}
	return out
}

// A sync run with an input writes its pre-input checkpoint and its input's
// checkpoint in one PutBatch when the saver stores batches, and the thread
// then reads back byte for byte as when each was its own Put: on a new
// thread, on the thread's next turn, and with a chain of nodes. Async runs
// pair them too (written before the first node runs, as the pre-input
// checkpoint was); exit runs, which hold everything, and savers without
// batches keep their Puts.
func TestPreInputPairedWithInputStep(t *testing.T) {
	msgs := graph.NewKey("msgs", graph.Concat[string]())
	b := graph.New(msgs)
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, func(_ context.Context, s graph.State) (graph.Output, error) {
			m := msgs.Get(s)
			return graph.Writes(graph.Append(msgs, n+": "+m[len(m)-1])), nil
		})
	}
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", "c")
	b.AddEdge("c", graph.END)
	g := mustCompile(t, b)
	ctx := context.Background()

	folded := &batchCounter{Memory: checkpoint.NewMemory()}
	plain := plainSaver{checkpoint.NewMemory()}
	for turn, m := range []string{"hi", "again"} {
		for _, s := range []checkpoint.Saver{folded, plain} {
			if _, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, m)), threadOpts(s, "t")...); err != nil {
				t.Fatal(err)
			}
		}
		if len(folded.batches) != turn+1 {
			t.Fatalf("turn %d: %d PutBatch calls in all, want one a turn", turn, len(folded.batches))
		}
		es := folded.batches[turn]
		if len(es) != 2 || es[0].Metadata.Source != checkpoint.SourceInput || es[1].Metadata.Source != checkpoint.SourceLoop ||
			es[1].Metadata.Parent != es[0].Checkpoint.ID || es[1].Metadata.Step != es[0].Metadata.Step+1 {
			t.Errorf("turn %d: the batch is not the pre-input checkpoint followed by its input's: %+v", turn, es)
		}
		// The three nodes' checkpoints are Puts.
		if want := 3 * (turn + 1); folded.puts != want {
			t.Errorf("turn %d: %d Puts, want %d", turn, folded.puts, want)
		}
		if d := cmp.Diff(normalThread(t, plain, "t"), normalThread(t, folded, "t")); d != "" {
			t.Errorf("turn %d: the thread written with the fold differs (-without +with):\n%s", turn, d)
		}
	}

	for _, mode := range []graph.Durability{graph.DurabilityAsync, graph.DurabilityExit} {
		s := &batchCounter{Memory: checkpoint.NewMemory()}
		p := plainSaver{checkpoint.NewMemory()}
		for _, sv := range []checkpoint.Saver{s, p} {
			if _, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, "hi")), append(threadOpts(sv, "t"), graph.WithDurability(mode))...); err != nil {
				t.Fatal(err)
			}
		}
		if want := map[graph.Durability]int{graph.DurabilityAsync: 1}[mode]; len(s.batches) != want {
			t.Errorf("%s: %d PutBatch calls, want %d", mode, len(s.batches), want)
		}
		if d := cmp.Diff(normalThread(t, p, "t"), normalThread(t, s, "t")); d != "" {
			t.Errorf("%s: the thread written with the fold differs (-without +with):\n%s", mode, d)
		}
	}
}

// A crash before the pair commits (its PutBatch fails) leaves the thread
// as it was before the run: a new thread stays empty, an old one keeps its
// head, and the run given the same input again runs as the first would.
// No node runs before the pair is written, in sync and async runs.
func TestPreInputPairFailsWhole(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(mode.String(), func(t *testing.T) { testPreInputPairFails(t, mode) })
	}
}

func testPreInputPairFails(t *testing.T, mode graph.Durability) {
	msgs := graph.NewKey("msgs", graph.Concat[string]())
	ran := 0
	b := graph.New(msgs)
	b.AddNode("reply", func(_ context.Context, s graph.State) (graph.Output, error) {
		ran++
		m := msgs.Get(s)
		return graph.Writes(graph.Append(msgs, "re: "+m[len(m)-1])), nil
	})
	b.SetEntry("reply")
	b.AddEdge("reply", graph.END)
	g := mustCompile(t, b)
	ctx := context.Background()
	s := &batchCounter{Memory: checkpoint.NewMemory()}
	run := append(threadOpts(s, "t"), graph.WithDurability(mode))
	boom := errors.New("the disk is gone")

	s.fail = boom
	if _, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, "hi")), run...); !errors.Is(err, boom) {
		t.Fatalf("Invoke with a failing PutBatch: err = %v, want the saver's", err)
	}
	if _, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t"}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("the thread after the failed pair: err = %v, want ErrNotFound (nothing stored)", err)
	}
	if ran != 0 {
		t.Fatalf("the node ran %d times before the pair was written, want 0", ran)
	}
	if _, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, "hi")), run...); err != nil {
		t.Fatal(err)
	}
	before := normalThread(t, s, "t")

	s.fail = boom
	if _, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, "again")), run...); !errors.Is(err, boom) {
		t.Fatalf("second turn with a failing PutBatch: err = %v", err)
	}
	if d := cmp.Diff(before, normalThread(t, s, "t")); d != "" {
		t.Errorf("the failed turn changed the thread (-before +after):\n%s", d)
	}
	res, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, "again")), run...)
	if err != nil || !cmp.Equal(msgs.Get(res.State), []string{"hi", "re: hi", "again", "re: again"}) {
		t.Errorf("the turn run again: %v, err %v", msgs.Get(res.State), err)
	}
}

// WithFinalWrite holds back the last checkpoint of a run that completes:
// until its Put the thread reads as before the last step (a crash there
// replays that step), and after it the thread is byte for byte the one a
// run without the option writes. A run that stops at an interrupt writes
// as usual and hands nothing over.
func TestFinalWriteHeld(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			msgs := graph.NewKey("msgs", graph.Concat[string]())
			g := echoChat(t, msgs)
			ctx := context.Background()
			held, plain := checkpoint.NewMemory(), checkpoint.NewMemory()
			var fw *graph.FinalWrite
			opt := graph.WithFinalWrite(func(f *graph.FinalWrite) { fw = f })
			for turn, m := range []string{"hi", "again"} {
				fw = nil
				res, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, m)), append(threadOpts(held, "t"), opt, graph.WithDurability(mode))...)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, m)), append(threadOpts(plain, "t"), graph.WithDurability(mode))...); err != nil {
					t.Fatal(err)
				}
				if fw == nil {
					t.Fatalf("turn %d: the completed run handed no final write over", turn)
				}
				if d := cmp.Diff(msgs.Get(res.State), msgs.Get(fw.State)); d != "" {
					t.Errorf("turn %d: the final write's state is not the run's (-run +final):\n%s", turn, d)
				}
				before, err := g.GetState(ctx, threadOpts(held, "t")...)
				if err != nil {
					t.Fatal(err)
				}
				if got := msgs.Get(before.Values); len(got) != 2*turn+1 || !cmp.Equal(before.Next, []string{"reply"}) {
					t.Errorf("turn %d: before the final Put the thread reads %v next %v, want the step before the last", turn, got, before.Next)
				}
				if err := fw.Put(ctx); err != nil {
					t.Fatal(err)
				}
				if err := fw.Put(ctx); err == nil {
					t.Error("a second Put of the final write succeeded")
				}
				if d := cmp.Diff(normalThread(t, plain, "t"), normalThread(t, held, "t")); d != "" {
					t.Errorf("turn %d: the thread with the final write differs (-without +with):\n%s", turn, d)
				}
			}

			// An interrupted run writes its checkpoints itself.
			b := graph.New(msgs)
			b.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Output, error) {
				if _, err := graph.Interrupt[string](ctx, "ok?"); err != nil {
					return nil, err
				}
				return graph.Writes(), nil
			})
			b.SetEntry("ask")
			b.AddEdge("ask", graph.END)
			ig := mustCompile(t, b)
			fw = nil
			s := checkpoint.NewMemory()
			_, err := ig.Invoke(ctx, graph.Writes(graph.Append(msgs, "q")), append(threadOpts(s, "i"), opt, graph.WithDurability(mode))...)
			var ie *graph.InterruptError
			if !errors.As(err, &ie) {
				t.Fatalf("the interrupting run: err = %v, want an interrupt", err)
			}
			if fw != nil {
				t.Error("an interrupted run handed a final write over")
			}
			snap, err := ig.GetState(ctx, threadOpts(s, "i")...)
			if err != nil || len(snap.Interrupts) != 1 {
				t.Errorf("the interrupted thread: %d interrupts, err %v; want 1", len(snap.Interrupts), err)
			}
		})
	}
}
