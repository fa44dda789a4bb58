package graph_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/graph"
)

// TestWritesCopies checks that Writes returns writes of its own: changing
// the slice it was given, or appending to one Update, changes no other
// Update, for small values (carved from a shared slab) and others alike.
func TestWritesCopies(t *testing.T) {
	n := graph.NewKey[int]("n")
	s := graph.NewKey[string]("s")
	for _, tc := range []struct {
		name string
		a, b graph.Write
	}{
		{"small", n.Set(1), n.Set(2)},
		{"pointer", s.Set("one"), s.Set("two")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := []graph.Write{tc.a}
			u := graph.Writes(ws...)
			ws[0] = tc.b
			if got := u[0].Value(); got != tc.a.Value() {
				t.Fatalf("after changing the slice passed in, the Update holds %v, want %v", got, tc.a.Value())
			}
			u1 := graph.Writes(tc.a)
			u2 := graph.Writes(tc.a)
			u3 := graph.Writes(tc.a, tc.a)
			u1 = append(u1, tc.b)
			u3 = append(u3, tc.b)
			if len(u1) != 2 || u1[1].Value() != tc.b.Value() {
				t.Fatalf("appended Update = %v", u1)
			}
			if len(u2) != 1 || u2[0].Value() != tc.a.Value() {
				t.Fatalf("appending to another Update changed this one: %v, want [%v]", u2, tc.a)
			}
			if cap(u2) != 1 {
				t.Fatalf("cap(Writes(w)) = %d, want 1: an append could write past it", cap(u2))
			}
			if len(u3) != 3 || u3[1].Value() != tc.a.Value() {
				t.Fatalf("appended Update = %v", u3)
			}
		})
	}
}

// TestWritesEmptyAndZero checks Writes' edge cases: none is an empty,
// non-nil Update (Invoke's "start a new run" input), and a zero Write is
// kept for the engine to report.
func TestWritesEmptyAndZero(t *testing.T) {
	if u := graph.Writes(); u == nil || len(u) != 0 {
		t.Fatalf("Writes() = %#v, want empty and non-nil", u)
	}
	var none []graph.Write
	if u := graph.Writes(none...); u == nil || len(u) != 0 {
		t.Fatalf("Writes(nil...) = %#v, want empty and non-nil", u)
	}
	if u := graph.Writes(graph.Write{}); len(u) != 1 || u[0].Key() != "" {
		t.Fatalf("Writes(Write{}) = %v, want the zero Write kept", u)
	}
	n := graph.NewKey[int]("n")
	u := graph.Writes(n.Set(1), n.Overwrite(2), graph.Write{}, n.Set(4), n.Set(5))
	if got := fmt.Sprint(u); got != "[set n 1 overwrite n 2 set  <nil> set n 4 set n 5]" {
		t.Fatalf("Writes of five = %s", got)
	}
}

// TestWritesConcurrent makes Updates from many goroutines at once (Writes
// shares slabs between the calls of a processor) and checks each holds
// only its own writes afterwards. Run it with -race.
func TestWritesConcurrent(t *testing.T) {
	n := graph.NewKey[int]("n")
	m := graph.NewKey[int64]("m")
	const goroutines, each = 8, 500
	got := make([][]graph.Update, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			us := make([]graph.Update, each)
			for i := range us {
				v := g*each + i
				if i%3 == 0 {
					us[i] = graph.Writes(n.Set(v), m.Set(int64(-v)))
				} else {
					us[i] = graph.Writes(n.Set(v))
				}
			}
			got[g] = us
		})
	}
	wg.Wait()
	for g, us := range got {
		for i, u := range us {
			v := g*each + i
			if w, ok := n.In(u); !ok || w != v {
				t.Fatalf("goroutine %d, Update %d: n = %d, %v; want %d", g, i, w, ok, v)
			}
			if want := 1 + btoi(i%3 == 0); len(u) != want {
				t.Fatalf("goroutine %d, Update %d has %d writes, want %d", g, i, len(u), want)
			}
			if i%3 == 0 {
				if w, _ := m.In(u); w != int64(-v) {
					t.Fatalf("goroutine %d, Update %d: m = %d, want %d", g, i, w, -v)
				}
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
