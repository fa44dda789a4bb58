package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// foldSaver is an in-memory saver that stores batches (so nested runs fold
// their input's checkpoint into their first step's) and counts, per
// namespace, its reads of a latest checkpoint and its PutBatch calls; its
// next PutBatch in a nested namespace fails when failNested is set.
type foldSaver struct {
	*checkpoint.Memory
	mu         sync.Mutex
	gets       map[string]int // Get of a namespace's latest, by namespace
	batches    map[string]int
	failNested error
}

func newFoldSaver() *foldSaver {
	return &foldSaver{Memory: checkpoint.NewMemory(), gets: map[string]int{}, batches: map[string]int{}}
}

func (f *foldSaver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if ref.ID == "" {
		f.mu.Lock()
		f.gets[ref.Namespace]++
		f.mu.Unlock()
	}
	return f.Memory.Get(ctx, ref)
}

func (f *foldSaver) PutBatch(ctx context.Context, ref checkpoint.Ref, es []checkpoint.Entry) (checkpoint.Ref, error) {
	f.mu.Lock()
	f.batches[ref.Namespace]++
	err := f.failNested
	if ref.Namespace == "" {
		err = nil
	} else {
		f.failNested = nil
	}
	f.mu.Unlock()
	if err != nil {
		return checkpoint.Ref{}, err
	}
	return f.Memory.PutBatch(ctx, ref, es)
}

// nestedReads sums the reads of a latest checkpoint in nested namespaces.
func (f *foldSaver) nestedReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for ns, c := range f.gets {
		if ns != "" {
			n += c
		}
	}
	return n
}

// listerSaver is what normalTree reads: a saver that lists namespaces.
type listerSaver interface {
	checkpoint.Saver
	Namespaces(ctx context.Context, thread string) ([]string, error)
}

// normalTree is normalThread over every namespace of a thread: the root's
// checkpoints (oldest first) and, after each checkpoint, the namespaces of
// its next tasks that exist, depth first, so that two runs of one graph
// read the same, byte for byte, exactly when every namespace holds the
// same checkpoints, parents, blobs and pending writes.
func normalTree(t *testing.T, s listerSaver, thread string) string {
	t.Helper()
	ctx := context.Background()
	all, err := s.Namespaces(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	type nsDump struct {
		NS     string
		Tuples []*checkpoint.Tuple
	}
	var out []nsDump
	var ids []string
	var walk func(ns string)
	walk = func(ns string) {
		var tups []*checkpoint.Tuple
		for tup, err := range s.List(ctx, checkpoint.Ref{ThreadID: thread, Namespace: ns}, checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			tups = append(tups, tup)
		}
		slices.Reverse(tups)
		out = append(out, nsDump{NS: ns, Tuples: tups})
		for _, tup := range tups {
			tup.Checkpoint.Created = time.Time{}
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
			// Parallel tasks save their writes in any order: sort them by
			// their task's place among the next tasks, then key and value.
			slices.SortStableFunc(tup.Writes, func(a, b checkpoint.PendingWrite) int {
				if c := slices.Index(ids, a.TaskID) - slices.Index(ids, b.TaskID); c != 0 {
					return c
				}
				return strings.Compare(a.Key+string(a.Value), b.Key+string(b.Value))
			})
			for _, w := range tup.Writes {
				ids = append(ids, w.TaskID)
			}
			for _, n := range tup.Checkpoint.Next {
				child := n.Node + ":" + n.ID
				if ns != "" {
					child = ns + "|" + child
				}
				if slices.Contains(all, child) && !slices.ContainsFunc(out, func(d nsDump) bool { return d.NS == child }) {
					walk(child)
				}
			}
		}
	}
	walk("")
	if len(out) < len(all) {
		t.Fatalf("walked %d namespaces of %d", len(out), len(all))
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	seen := map[string]bool{}
	for i, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			text = strings.ReplaceAll(text, id, fmt.Sprintf("id-%d", i))
		}
	}
	return text
}

// plainLister hides PutBatch (no fold) but lists namespaces.
type plainLister struct{ m *checkpoint.Memory }

func (p plainLister) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	return p.m.Get(ctx, ref)
}
func (p plainLister) List(ctx context.Context, ref checkpoint.Ref, o checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return p.m.List(ctx, ref, o)
}
func (p plainLister) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	return p.m.Put(ctx, ref, cp, md)
}
func (p plainLister) PutWrites(ctx context.Context, ref checkpoint.Ref, task string, ws []checkpoint.PendingWrite) error {
	return p.m.PutWrites(ctx, ref, task, ws)
}
func (p plainLister) DeleteThread(ctx context.Context, id string) error {
	return p.m.DeleteThread(ctx, id)
}
func (p plainLister) CopyThread(ctx context.Context, from, to string) error {
	return p.m.CopyThread(ctx, from, to)
}
func (p plainLister) Prune(ctx context.Context, o checkpoint.PruneOptions) (int, error) {
	return p.m.Prune(ctx, o)
}
func (p plainLister) DeleteRun(ctx context.Context, thread, run string) (int, error) {
	return p.m.DeleteRun(ctx, thread, run)
}
func (p plainLister) Namespaces(ctx context.Context, thread string) ([]string, error) {
	return p.m.Namespaces(ctx, thread)
}

// stepTask is the payload of a step of the plan-shaped graphs below.
type stepTask struct {
	ID    string `json:"id"`
	Grand bool   `json:"grand,omitempty"` // the loop's first node invokes a graph of its own
	Ask   bool   `json:"ask,omitempty"`   // the loop's first node asks before it goes on
	Fail  bool   `json:"fail,omitempty"`  // the loop's left node fails its first time
}

// planShaped builds the shape of a plan-and-execute run: a dispatch node
// sends each level's steps; each step invokes a loop as a nested run (a
// first node, then two nodes in parallel, whose pending writes are saved)
// and writes its result to done. runs counts each loop node's executions
// by step and node.
func planShaped(t *testing.T, levels [][]stepTask, runs *sync.Map) *graph.Graph {
	t.Helper()
	msgs, done := foldMsgs, foldDone
	count := func(id, node string) int32 {
		n, _ := runs.LoadOrStore(id+"/"+node, new(int32))
		p := n.(*int32)
		foldMu.Lock()
		defer foldMu.Unlock()
		*p++
		return *p
	}
	gb := graph.New(msgs)
	gb.AddNode("g", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(msgs, "grand saw "+strings.Join(msgs.Get(s), ","))), nil
	})
	gb.SetEntry("g")
	gb.AddEdge("g", graph.END)
	grand := mustCompile(t, gb)

	type ctxKey struct{}
	ib := graph.New(msgs)
	ib.AddNode("first", func(ctx context.Context, s graph.State) (graph.Output, error) {
		st := ctx.Value(ctxKey{}).(stepTask)
		count(st.ID, "first")
		out := []string{"first of " + st.ID}
		if st.Grand {
			res, err := grand.Invoke(ctx, graph.Writes(graph.Append(msgs, "from "+st.ID)))
			if err != nil {
				return nil, err
			}
			out = append(out, msgs.Get(res.State)...)
		}
		if st.Ask {
			a, err := graph.Interrupt[string](ctx, "go on with "+st.ID+"?")
			if err != nil {
				return nil, err
			}
			out = append(out, "answer "+a)
		}
		return graph.Writes(graph.Append(msgs, out...)), nil
	})
	for _, n := range []string{"left", "right"} {
		ib.AddNode(n, func(ctx context.Context, s graph.State) (graph.Output, error) {
			st := ctx.Value(ctxKey{}).(stepTask)
			if count(st.ID, n) == 1 && st.Fail && n == "left" {
				return nil, errLeft
			}
			return graph.Writes(graph.Append(msgs, n)), nil
		})
		ib.AddEdge("first", n)
		ib.AddEdge(n, graph.END)
	}
	ib.SetEntry("first")
	loop := mustCompile(t, ib)

	ob := graph.New(done)
	ob.AddNode("dispatch", func(ctx context.Context, s graph.State) (graph.Output, error) {
		n := len(done.Get(s))
		for _, l := range levels {
			if n == 0 {
				var ts []graph.Target
				for _, st := range l {
					ts = append(ts, graph.Send("step", st))
				}
				return graph.Command{Goto: ts}, nil
			}
			n -= len(l)
		}
		return graph.Command{Goto: []graph.Target{graph.To(graph.END)}}, nil
	}, graph.Destinations("step", graph.END))
	graph.AddSendNode(ob, "step", func(ctx context.Context, s graph.State, st stepTask) (graph.Output, error) {
		res, err := loop.Invoke(context.WithValue(ctx, ctxKey{}, st), graph.Writes(graph.Append(msgs, "do "+st.ID)))
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(done, st.ID+": "+strings.Join(msgs.Get(res.State), "; "))), nil
	})
	ob.SetEntry("dispatch")
	ob.AddEdge("step", "dispatch")
	return mustCompile(t, ob)
}

var (
	errLeft  = errors.New("left failed")
	foldMu   sync.Mutex
	foldMsgs = graph.NewKey("msgs", graph.Concat[string]())
	foldDone = graph.NewKey("done", graph.Concat[string]())
)

var foldLevels = [][]stepTask{
	{{ID: "a"}, {ID: "b", Grand: true}, {ID: "c"}},
	{{ID: "d"}},
}

// A nested run in a namespace its parent's run just made reads no latest
// checkpoint (there is none), and, with a saver that stores batches,
// writes its input's checkpoint with its first step's; every namespace of
// the thread then reads back byte for byte as when each checkpoint is its
// own Put: the same checkpoints, parents, blobs and pending writes —
// including a step whose first node runs a graph of its own, which writes
// the held checkpoint first, as its namespace derives from it. Before,
// each of the five nested runs read its namespace's latest checkpoint.
func TestNestedRunFoldsItsInputCheckpoint(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := context.Background()
			var runs sync.Map
			g := planShaped(t, foldLevels, &runs)

			plain := plainLister{checkpoint.NewMemory()}
			if _, err := g.Invoke(ctx, graph.Update{}, graph.WithCheckpointer(plain), graph.WithThread("t"), graph.WithDurability(mode)); err != nil {
				t.Fatal(err)
			}
			s := newFoldSaver()
			res, err := g.Invoke(ctx, graph.Update{}, graph.WithCheckpointer(s), graph.WithThread("t"), graph.WithDurability(mode))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(foldDone.Get(res.State)); n != 4 {
				t.Fatalf("%d steps done, want 4", n)
			}
			if d := cmp.Diff(normalTree(t, plain, "t"), normalTree(t, s, "t")); d != "" {
				t.Errorf("the thread written with the fold differs (-without +with):\n%s", d)
			}
			if n := s.nestedReads(); n != 0 {
				t.Errorf("nested runs read their namespace's latest checkpoint %d times, want 0 (their namespaces are new)", n)
			}
			s.mu.Lock()
			nested := 0
			for ns, n := range s.batches {
				if ns != "" {
					nested += n
				}
			}
			s.mu.Unlock()
			// a, c, d and the grand run pair their input's checkpoint with
			// their first step's; b writes its own before its first node
			// starts the grand run.
			if nested != 4 {
				t.Errorf("nested runs wrote %d batches, want 4 (%v)", nested, s.batches)
			}
		})
	}
}

// runCount reads planShaped's count of one loop node's executions.
func runCount(runs *sync.Map, id, node string) int32 {
	n, ok := runs.Load(id + "/" + node)
	if !ok {
		return 0
	}
	foldMu.Lock()
	defer foldMu.Unlock()
	return *n.(*int32)
}

// With the fold, a nested run stopped inside its first step (an
// interrupt) or after it (a failure in its second) leaves every namespace
// as without it, and resumes inside its loop: the first node, whose
// output was saved, does not run again; an interrupted node runs again
// with its answer; a parallel node that finished is not run again.
func TestNestedFoldStopsAndResumesAsBefore(t *testing.T) {
	cases := []struct {
		name   string
		levels [][]stepTask
		resume []graph.RunOption
		want   map[string]int32 // loop node executions after the resume
	}{
		{"interrupt in the first step", [][]stepTask{{{ID: "a", Ask: true}, {ID: "b"}}, {{ID: "c", Grand: true, Ask: true}}},
			[]graph.RunOption{graph.WithResume("yes")},
			map[string]int32{"a/first": 2, "a/left": 1, "a/right": 1, "b/first": 1, "c/first": 2}},
		// The failing node's sibling may or may not have saved its writes
		// when the failure cancels the step (as without the fold): the
		// threads are not compared, and right is not counted.
		{"failure in the second step", [][]stepTask{{{ID: "a", Fail: true}}, {{ID: "b", Grand: true, Fail: true}}},
			nil,
			map[string]int32{"a/first": 1, "a/left": 2, "b/first": 1, "b/left": 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			var runs, plainRuns sync.Map
			g, pg := planShaped(t, c.levels, &runs), planShaped(t, c.levels, &plainRuns)
			s, plain := newFoldSaver(), plainLister{checkpoint.NewMemory()}
			opts := []graph.RunOption{graph.WithCheckpointer(s), graph.WithThread("t")}
			popts := []graph.RunOption{graph.WithCheckpointer(plain), graph.WithThread("t")}
			_, err := g.Invoke(ctx, graph.Update{}, opts...)
			_, perr := pg.Invoke(ctx, graph.Update{}, popts...)
			if err == nil || (err == nil) != (perr == nil) {
				t.Fatalf("first run: err = %v, without the fold %v; want both to stop", err, perr)
			}
			timing := c.name == "failure in the second step"
			if d := cmp.Diff(normalTree(t, plain, "t"), normalTree(t, s, "t")); d != "" && !timing {
				t.Errorf("stopped: the thread with the fold differs (-without +with):\n%s", d)
			}
			for {
				res, err := g.Invoke(ctx, nil, append(opts, c.resume...)...)
				_, perr := pg.Invoke(ctx, nil, append(popts, c.resume...)...)
				if (err == nil) != (perr == nil) {
					t.Fatalf("resume: err = %v, without the fold %v", err, perr)
				}
				if err == nil {
					if n, want := len(foldDone.Get(res.State)), len(c.levels[0])+len(c.levels[1]); n != want {
						t.Fatalf("%d steps done, want %d", n, want)
					}
					break
				}
				if !errors.Is(err, graph.ErrInterrupted) && !errors.Is(err, errLeft) {
					t.Fatal(err)
				}
			}
			if d := cmp.Diff(normalTree(t, plain, "t"), normalTree(t, s, "t")); d != "" && !timing {
				t.Errorf("resumed: the thread with the fold differs (-without +with):\n%s", d)
			}
			for k, want := range c.want {
				id, node, _ := strings.Cut(k, "/")
				if got := runCount(&runs, id, node); got != want {
					t.Errorf("%s ran %d times, want %d", k, got, want)
				}
				if got := runCount(&plainRuns, id, node); got != want {
					t.Errorf("without the fold, %s ran %d times, want %d", k, got, want)
				}
			}
		})
	}
}

// A nested run whose first save (the folded pair) fails leaves its
// namespace empty; the run fails, and resuming it runs that step's loop
// from its start, once, while a finished step does not run again.
func TestNestedFoldPairFails(t *testing.T) {
	ctx := context.Background()
	var runs sync.Map
	g := planShaped(t, [][]stepTask{{{ID: "a"}}, {{ID: "b"}}}, &runs)
	s := newFoldSaver()
	opts := []graph.RunOption{graph.WithCheckpointer(s), graph.WithThread("t")}
	boom := errors.New("the disk is gone")
	s.failNested = boom
	if _, err := g.Invoke(ctx, graph.Update{}, opts...); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the saver's", err)
	}
	if ns, err := s.Namespaces(ctx, "t"); err != nil || len(ns) != 1 {
		t.Fatalf("namespaces after the failed pair: %q, %v; want the root's alone", ns, err)
	}
	res, err := g.Invoke(ctx, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got := foldDone.Get(res.State); len(got) != 2 {
		t.Fatalf("done = %q", got)
	}
	for k, want := range map[string]int32{"a/first": 2, "a/left": 1, "a/right": 1, "b/first": 1} {
		id, node, _ := strings.Cut(k, "/")
		if got := runCount(&runs, id, node); got != want {
			t.Errorf("%s ran %d times, want %d", k, got, want)
		}
	}
}
