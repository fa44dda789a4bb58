package graph

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

type idItem struct {
	ID   string
	Text string
}

func idOf(e idItem) string { return e.ID }

// mergeByIDModel is merge-by-ID spelled out plainly: for each written item
// in order, replace the last current item with its ID, or append it.
func mergeByIDModel(cur []idItem, upds [][]idItem) []idItem {
	out := append([]idItem(nil), cur...)
	for _, upd := range upds {
		for _, e := range upd {
			at := -1
			for i := range out {
				if out[i].ID == e.ID {
					at = i
				}
			}
			if at >= 0 {
				out[at] = e
			} else {
				out = append(out, e)
			}
		}
	}
	return out
}

// TestMergeByIDMatchesTheModel runs merge-by-ID on random histories (with
// repeated IDs among the current items and within and across writes) on
// both sides of mergeScanMax, through reduce and batch, against the model.
func TestMergeByIDMatchesTheModel(t *testing.T) {
	r := MergeByIDFunc(idOf)
	rng := rand.New(rand.NewPCG(1, 2))
	item := func(ids int, tag string) idItem {
		return idItem{ID: fmt.Sprint("m", rng.IntN(ids)), Text: tag}
	}
	for trial := range 2000 {
		ids := 1 + rng.IntN(40)
		cur := make([]idItem, rng.IntN(30))
		for i := range cur {
			cur[i] = item(ids, fmt.Sprint("cur", i))
		}
		upds := make([][]idItem, 1+rng.IntN(3))
		for u := range upds {
			upds[u] = make([]idItem, rng.IntN(2*mergeScanMax))
			for i := range upds[u] {
				upds[u][i] = item(ids, fmt.Sprint("upd", u, ".", i))
			}
		}
		before := append([]idItem(nil), cur...)
		want := mergeByIDModel(cur, upds)
		got, err := r.batch(cur, upds)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			want = []idItem{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: batch of %v into %v\n got %v\nwant %v", trial, upds, cur, got, want)
		}
		if cap(got) != len(got) {
			t.Fatalf("trial %d: the result has spare capacity (len %d, cap %d)", trial, len(got), cap(got))
		}
		if !slices.Equal(cur, before) {
			t.Fatalf("trial %d: the current value was modified", trial)
		}
		if len(upds[0]) > 0 {
			one, err := r.reduce(cur, upds[0])
			if err != nil {
				t.Fatal(err)
			}
			if want := mergeByIDModel(cur, upds[:1]); !reflect.DeepEqual(one, want) {
				t.Fatalf("trial %d: reduce of %v into %v\n got %v\nwant %v", trial, upds[0], cur, one, want)
			}
		}
	}
}

// TestMergeByIDEmptyIDFails checks both ways of finding items report an
// item with no ID, naming its position in the write.
func TestMergeByIDEmptyIDFails(t *testing.T) {
	r := MergeByIDFunc(idOf)
	cur := []idItem{{ID: "a"}}
	for _, n := range []int{1, mergeScanMax + 1} {
		upd := make([]idItem, n)
		for i := range upd {
			upd[i] = idItem{ID: fmt.Sprint("x", i)}
		}
		upd[n-1].ID = ""
		_, err := r.reduce(cur, upd)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("written item %d has an empty ID", n-1)) {
			t.Errorf("%d written items, the last without an ID: error %v", n, err)
		}
	}
}

// BenchmarkMergeByIDAppend appends one message to histories of 10, 100 and
// 1000 messages, as a chat agent's every turn does.
func BenchmarkMergeByIDAppend(b *testing.B) {
	r := MergeByIDFunc(idOf)
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cur := make([]idItem, n)
			for i := range cur {
				cur[i] = idItem{ID: fmt.Sprintf("msg-%08d", i), Text: "hello"}
			}
			upd := []idItem{{ID: "msg-new", Text: "hi"}}
			b.ReportAllocs()
			for b.Loop() {
				out, err := r.reduce(cur, upd)
				if err != nil || len(out) != n+1 {
					b.Fatal(len(out), err)
				}
			}
		})
	}
}
