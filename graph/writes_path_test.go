package graph_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/trellis-agents/trellis/graph"
)

// TestWritesSlabBoundaries makes Updates of one to five writes in turn on
// one goroutine, so that parts of the shared slab end at every offset and
// some Updates do not fit what is left of one, then checks each Update
// still holds its own writes and is capped at them.
func TestWritesSlabBoundaries(t *testing.T) {
	n := graph.NewKey[int]("n")
	const updates = 300
	us := make([]graph.Update, updates)
	for i := range us {
		ws := make([]graph.Write, 1+i%5)
		for j := range ws {
			ws[j] = n.Set(i*10 + j)
		}
		us[i] = graph.Writes(ws...)
	}
	for i, u := range us {
		if len(u) != 1+i%5 || cap(u) != len(u) {
			t.Fatalf("Update %d: len %d cap %d, want both %d", i, len(u), cap(u), 1+i%5)
		}
		for j, w := range u {
			if w.Key() != "n" || w.Op() != "set" || w.Value() != i*10+j {
				t.Fatalf("Update %d write %d = %v, want set n %d", i, j, w, i*10+j)
			}
		}
	}
}

// TestWritesAppliedLikeUpdate runs two parallel nodes whose writes are
// made three ways: graph.Writes (small values carved from the shared slab,
// others copied), a plain Update the node built itself, and AddWrites. The
// state or the error must be the same each way, over write kinds
// (reducer sets, overwrites, appends and removes, small and not), conflicts
// on a LastValue key, and more writes than one slab part holds.
func TestWritesAppliedLikeUpdate(t *testing.T) {
	sum := graph.NewKey("sum", graph.Sum[int]())
	last := graph.NewKey[int]("last")
	ratio := graph.NewKey[float64]("ratio")
	name := graph.NewKey[string]("name")
	notes := graph.NewKey("notes", graph.MergeByID[note]())
	cases := []struct {
		name string
		a, b []graph.Write
	}{
		{"sum", []graph.Write{sum.Set(2)}, []graph.Write{sum.Set(3), sum.Set(4)}},
		{"overwrite", []graph.Write{sum.Set(2), sum.Overwrite(10)}, []graph.Write{sum.Set(1)}},
		{"last value", []graph.Write{last.Set(7), ratio.Set(0.5)}, []graph.Write{name.Set("b")}},
		{"conflict", []graph.Write{last.Set(1)}, []graph.Write{last.Set(2)}},
		{"conflict not small", []graph.Write{name.Set("a")}, []graph.Write{name.Set("b")}},
		{"two in one node", []graph.Write{last.Set(1), last.Set(2)}, nil},
		{"append and remove", []graph.Write{graph.Append(notes, note{"a", "one"}, note{"b", "two"})}, []graph.Write{sum.Set(1), graph.Remove(notes, "a")}},
		{"five small", []graph.Write{sum.Set(1), sum.Set(2), last.Set(3), ratio.Set(4), sum.Set(5)}, []graph.Write{sum.Set(6)}},
		{"mixed", []graph.Write{sum.Set(1), name.Set("x"), last.Set(2)}, []graph.Write{ratio.Set(1.5), graph.Append(notes, note{"c", "three"})}},
		{"zero write", []graph.Write{sum.Set(1), {}}, nil},
	}
	outcome := func(t *testing.T, mode string, a, b []graph.Write) string {
		t.Helper()
		g := graph.New(sum, last, ratio, name, notes)
		for _, n := range []struct {
			name string
			ws   []graph.Write
		}{{"a", a}, {"b", b}} {
			g.AddNode(n.name, func(ctx context.Context, _ graph.State) (graph.Output, error) {
				switch mode {
				case "Writes":
					return graph.Writes(n.ws...), nil
				case "Update":
					return graph.Update(slices.Clone(n.ws)), nil
				default:
					return nil, graph.AddWrites(ctx, n.ws...)
				}
			})
			g.AddEdge(graph.START, n.name)
			g.AddEdge(n.name, graph.END)
		}
		res, err := mustCompile(t, g).Invoke(context.Background(), nil)
		if err != nil {
			return "error: " + err.Error()
		}
		s := res.State
		return fmt.Sprintf("sum=%d last=%d ratio=%g name=%q notes=%v", sum.Get(s), last.Get(s), ratio.Get(s), name.Get(s), notes.Get(s))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := outcome(t, "Update", tc.a, tc.b)
			if got := outcome(t, "Writes", tc.a, tc.b); got != want {
				t.Errorf("with graph.Writes: %s\nwith an Update:   %s", got, want)
			}
			if tc.name == "zero write" {
				return // AddWrites refuses it itself, with its own error
			}
			if got := outcome(t, "AddWrites", tc.a, tc.b); got != want {
				t.Errorf("with AddWrites:  %s\nwith an Update: %s", got, want)
			}
			t.Log(want)
		})
	}
}
