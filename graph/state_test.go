package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

type msg struct {
	MsgID string
	Text  string
}

func (m msg) ID() string { return m.MsgID }

// runWrites applies each batch of writes as one step of a chain and returns
// the final state.
func runWrites(t *testing.T, keys []graph.AnyKey, steps ...[]graph.Write) (graph.State, error) {
	t.Helper()
	b := graph.New(keys...)
	prev := graph.START
	for i, ws := range steps {
		name := string(rune('a' + i))
		b.AddNode(name, writeNode(ws...))
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	res, err := mustCompile(t, b).Invoke(context.Background(), nil)
	if res == nil {
		return graph.State{}, err
	}
	return res.State, err
}

func TestReducers(t *testing.T) {
	last := graph.NewKey[string]("last")
	list := graph.NewKey("list", graph.Concat[int]())
	sum := graph.NewKey("sum", graph.Sum[float64]())
	m := graph.NewKey("map", graph.MergeMap[string, int]())
	msgs := graph.NewKey("msgs", graph.MergeByID[msg]())
	maxK := graph.NewKey("max", graph.Reduce("max", func(cur, upd int) (int, error) { return max(cur, upd), nil }))
	def := graph.NewKey("def", graph.Default("hello"))
	keys := []graph.AnyKey{last, list, sum, m, msgs, maxK, def}

	s, err := runWrites(t, keys,
		[]graph.Write{last.Set("one"), graph.Append(list, 1, 2), sum.Set(1.5), m.Set(map[string]int{"a": 1, "b": 2}),
			graph.Append(msgs, msg{"1", "hi"}, msg{"2", "there"}), maxK.Set(3)},
		[]graph.Write{last.Set("two"), graph.Append(list, 3), sum.Set(2), m.Set(map[string]int{"b": 20, "c": 3}),
			graph.Append(msgs, msg{"1", "hello"}, msg{"3", "new"}), maxK.Set(1)},
		[]graph.Write{graph.DeleteKeys(m, "a"), graph.Remove(msgs, "2"), list.Overwrite([]int{9})},
	)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	check("last", last.Get(s), "two")
	check("list", list.Get(s), []int{9})
	check("sum", sum.Get(s), 3.5)
	check("map", m.Get(s), map[string]int{"b": 20, "c": 3})
	check("msgs", msgs.Get(s), []msg{{"1", "hello"}, {"3", "new"}})
	check("max", maxK.Get(s), 3)
	check("default", def.Get(s), "hello")
	if _, ok := def.Lookup(s); ok {
		t.Error("Lookup of an unwritten key reported it written")
	}
	check("versions", []uint64{last.Version(s), list.Version(s), m.Version(s), def.Version(s)}, []uint64{2, 3, 3, 0})
	check("keys", s.Keys(), []string{"last", "list", "sum", "map", "msgs", "max"})
}

func TestReducerErrors(t *testing.T) {
	msgs := graph.NewKey("msgs", graph.MergeByID[msg]())
	last := graph.NewKey[int]("n")
	tests := []struct {
		name string
		ws   []graph.Write
		want []string
	}{
		{"empty id", []graph.Write{graph.Append(msgs, msg{"", "x"})}, []string{`"msgs"`, "empty ID"}},
		{"remove missing", []graph.Write{graph.Remove(msgs, "nope")}, []string{`"msgs"`, `"nope"`}},
		{"same node twice", []graph.Write{last.Set(1), last.Set(2)}, []string{`"a"`, `"n"`, "twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runWrites(t, []graph.AnyKey{msgs, last}, tc.ws)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

func TestLastValueConflictNamesKeyAndBothNodes(t *testing.T) {
	k := graph.NewKey[string]("owner")
	b := graph.New(k)
	b.AddNode("left", writeNode(k.Set("l")))
	b.AddNode("right", writeNode(k.Set("r")))
	b.AddEdge(graph.START, "left")
	b.AddEdge(graph.START, "right")
	b.AddEdge("left", graph.END)
	b.AddEdge("right", graph.END)
	_, err := mustCompile(t, b).Invoke(context.Background(), nil)
	if err == nil {
		t.Fatal("two writes to a last-value key in one step did not fail")
	}
	for _, w := range []string{`"owner"`, `"left"`, `"right"`, "step 1"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %s", err, w)
		}
	}
}

func TestOverwriteBypassesReducer(t *testing.T) {
	list := graph.NewKey("list", graph.Concat[string]())
	s, err := runWrites(t, []graph.AnyKey{list},
		[]graph.Write{graph.Append(list, "a", "b")},
		[]graph.Write{list.Overwrite(nil), graph.Append(list, "c")})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"c"}, list.Get(s)); d != "" {
		t.Error(d)
	}
}

func TestWriteToUndeclaredKeyFails(t *testing.T) {
	declared := graph.NewKey[int]("declared")
	stray := graph.NewKey[int]("stray")
	_, err := runWrites(t, []graph.AnyKey{declared}, []graph.Write{stray.Set(1)})
	var ne *graph.NodeError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), `"stray"`) || !strings.Contains(err.Error(), "graph.New") {
		t.Fatalf("got %v, want a NodeError naming the stray key and how to declare it", err)
	}
}

func TestReadOfUndeclaredKeyIsNodeError(t *testing.T) {
	declared := graph.NewKey[int]("declared")
	stray := graph.NewKey[int]("stray")
	b := graph.New(declared)
	b.AddNode("a", func(_ context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(declared.Set(stray.Get(s))), nil
	})
	b.SetEntry("a")
	b.AddEdge("a", graph.END)
	_, err := mustCompile(t, b).Invoke(context.Background(), nil)
	var pe *graph.PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `"stray" is not in this graph's schema`) {
		t.Fatalf("got %v, want the read turned into a node error naming the key", err)
	}
}

func TestKeyIn(t *testing.T) {
	n := graph.NewKey[int]("n")
	other := graph.NewKey[string]("other")
	u := graph.Writes(n.Set(1), other.Set("x"), n.Set(2))
	if v, ok := n.In(u); !ok || v != 2 {
		t.Errorf("In = %v, %v; want the last write 2", v, ok)
	}
	if _, ok := n.In(graph.Writes(other.Set("y"))); ok {
		t.Error("In found a write that is not there")
	}
}
