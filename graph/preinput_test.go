package graph_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// echoChat answers each message with "re: " and the message.
func echoChat(t *testing.T, msgs *graph.Key[[]string]) *graph.Graph {
	b := graph.New(msgs)
	b.AddNode("reply", func(_ context.Context, s graph.State) (graph.Output, error) {
		m := msgs.Get(s)
		return graph.Writes(graph.Append(msgs, "re: "+m[len(m)-1])), nil
	})
	b.SetEntry("reply")
	b.AddEdge("reply", graph.END)
	return mustCompile(t, b)
}

// Editing a thread's first message, as a chat UI does it: take the parent
// of the checkpoint where the message first appears and run the edited
// message from there. The thread branches: the new head holds the edited
// message and not the original, and the original branch stays. Then a
// replay of that parent without input applies the input it carries. At the
// top level and inside one and two subgraphs, in every durability mode.
func TestEditFirstMessageBranches(t *testing.T) {
	eachDepthAndMode(t, func(t *testing.T, depth int, mode graph.Durability) {
		msgs := graph.NewKey("msgs", graph.Concat[string]())
		g, _ := atDepth(t, echoChat(t, msgs), depth, msgs)
		run := append(threadOpts(checkpoint.NewMemory(), "edit"), graph.WithDurability(mode))
		ctx := context.Background()
		for _, m := range []string{"hi", "how"} {
			if _, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, m)), run...); err != nil {
				t.Fatal(err)
			}
		}
		var first *graph.Snapshot // the oldest checkpoint holding "hi"
		var head string
		steps := map[string]int{}
		for s, err := range g.History(ctx, checkpoint.ListOptions{}, run...) {
			if err != nil {
				t.Fatal(err)
			}
			if head == "" {
				head = s.Checkpoint.ID
			}
			if slices.Contains(msgs.Get(s.Values), "hi") {
				first = s
			}
			steps[s.Checkpoint.ID] = s.Metadata.Step
		}
		if first == nil || first.Parent.ID == "" {
			t.Fatalf("the checkpoint where the first message appears has no parent: %+v", first)
		}
		parent, err := g.GetState(ctx, append(run, graph.WithCheckpointID(first.Parent.ID))...)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs.Get(parent.Values)) != 0 || !cmp.Equal(parent.Next, []string{graph.START}) || parent.Metadata.Step != -1 || parent.Metadata.Source != checkpoint.SourceInput {
			t.Errorf("the parent: values %v next %v metadata %+v", msgs.Get(parent.Values), parent.Next, parent.Metadata)
		}
		res, err := g.Invoke(ctx, graph.Writes(graph.Append(msgs, "hello")), append(run, graph.WithCheckpointID(first.Parent.ID))...)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"hello", "re: hello"}, msgs.Get(res.State)); d != "" {
			t.Errorf("after the edit (-want +got):\n%s", d)
		}
		now, err := g.GetState(ctx, run...)
		if err != nil || !cmp.Equal(msgs.Get(now.Values), []string{"hello", "re: hello"}) {
			t.Errorf("the thread's state after the edit: %v, err %v", msgs.Get(now.Values), err)
		}
		old, err := g.GetState(ctx, append(run, graph.WithCheckpointID(head))...)
		if err != nil || !cmp.Equal(msgs.Get(old.Values), []string{"hi", "re: hi", "how", "re: how"}) {
			t.Errorf("the original branch: %v, err %v", msgs.Get(old.Values), err)
		}
		// A replay of the pre-input checkpoint applies the input it holds.
		res, err = g.Invoke(ctx, nil, append(run, graph.WithCheckpointID(first.Parent.ID))...)
		if err != nil || !cmp.Equal(msgs.Get(res.State), []string{"hi", "re: hi"}) {
			t.Errorf("replay of the pre-input checkpoint: %v, err %v", msgs.Get(res.State), err)
		}
	})
}

// failingPut is a saver whose Put of the first step-0 checkpoint fails, as
// if the process died between the pre-input checkpoint and the input's.
type failingPut struct {
	checkpoint.Saver
	failed bool
}

func (f *failingPut) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	if md.Step == 0 && !f.failed {
		f.failed = true
		return checkpoint.Ref{}, errors.New("the disk is gone")
	}
	return f.Saver.Put(ctx, ref, cp, md)
}

// A run that stopped after its pre-input checkpoint is resumed with no
// input: the input the checkpoint carries is applied, once, and no second
// pre-input checkpoint is written.
func TestPreInputCheckpointResumes(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			msgs := graph.NewKey("msgs", graph.Concat[string]())
			g := echoChat(t, msgs)
			saver := &failingPut{Saver: checkpoint.NewMemory()}
			run := append(threadOpts(saver, "crash"), graph.WithDurability(mode))
			if _, err := g.Invoke(context.Background(), graph.Writes(graph.Append(msgs, "hi")), run...); err == nil {
				t.Fatal("no error")
			}
			s, err := g.GetState(context.Background(), run...)
			if err != nil || !cmp.Equal(s.Next, []string{graph.START}) {
				t.Fatalf("head after the failure: next %v, err %v", s.Next, err)
			}
			res, err := g.Invoke(context.Background(), nil, run...)
			if err != nil || !cmp.Equal(msgs.Get(res.State), []string{"hi", "re: hi"}) {
				t.Fatalf("resumed: %v, err %v", msgs.Get(res.State), err)
			}
			n := 0
			for s, err := range g.History(context.Background(), checkpoint.ListOptions{Filter: map[string]string{"source": "input"}}, run...) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				_ = s
			}
			if n != 1 {
				t.Errorf("%d pre-input checkpoints, want 1", n)
			}
		})
	}
}
