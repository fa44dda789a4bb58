package store

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestTopKKeepsTheBest(t *testing.T) {
	top := NewTopK(3)
	ns := []string{"n"}
	for i, s := range []float64{0.1, 0.9, 0.5, 0.9, 0.2, 0.7} {
		ns[0] = "n" // reused memory: Offer must copy what it keeps
		top.Offer(ns, string(rune('a'+i)), s)
		ns[0] = "changed"
	}
	got := top.Best(0)
	want := []string{"b", "d", "f"} // 0.9 (b before d on the key), 0.9, 0.7
	if len(got) != 3 {
		t.Fatalf("Best = %+v", got)
	}
	for i, c := range got {
		if c.Key != want[i] || c.Namespace[0] != "n" {
			t.Errorf("Best[%d] = %+v; want key %s in namespace n", i, c, want[i])
		}
	}
	if rest := top.Best(2); len(rest) != 1 || rest[0].Key != "f" {
		t.Errorf("Best(2) = %+v", rest)
	}
	if none := top.Best(5); len(none) != 0 {
		t.Errorf("Best(5) = %+v", none)
	}
}

func TestDotIsCosineOfNormalized(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 40; n++ {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = r.Float32()-0.5, r.Float32()-0.5
		}
		want := Cosine(a, b)
		got := Dot(Normalize(append([]float32(nil), a...)), Normalize(append([]float32(nil), b...)))
		if math.Abs(got-want) > 1e-5 {
			t.Errorf("n=%d: Dot of normalized = %v; Cosine = %v", n, got, want)
		}
	}
	if v := Normalize([]float32{0, 0}); v[0] != 0 || v[1] != 0 {
		t.Errorf("Normalize(0) = %v", v)
	}
}

// BenchmarkDot256 is the scoring cost of one item in a semantic search.
func BenchmarkDot256(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x, y := make([]float32, 256), make([]float32, 256)
	for i := range x {
		x[i], y[i] = r.Float32(), r.Float32()
	}
	var s float64
	for b.Loop() {
		s += Dot(x, y)
	}
	_ = s
}
