package eval_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/eval"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

func TestWilson(t *testing.T) {
	// Reference values of the 95 % Wilson score interval.
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{{0, 10, 0, 0.2775}, {10, 10, 0.7225, 1}, {5, 10, 0.2366, 0.7634}, {81, 263, 0.2553, 0.3662}} {
		iv := eval.Wilson(c.k, c.n)
		if !near(iv.Low, c.lo) || !near(iv.High, c.hi) || !near(iv.Value, float64(c.k)/float64(c.n)) {
			t.Errorf("Wilson(%d, %d) = %+v, want [%v, %v]", c.k, c.n, iv, c.lo, c.hi)
		}
	}
	if (eval.Wilson(0, 0) != eval.Interval{}) {
		t.Error("Wilson(0, 0)")
	}
}

func TestPassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k   int
		atK, hatK float64
	}{
		{3, 0, 3, 0, 0}, {3, 3, 3, 1, 1}, {3, 1, 3, 1, 0}, {3, 2, 3, 1, 0},
		{4, 2, 2, 1 - 1.0/6, 1.0 / 6}, {5, 1, 1, 0.2, 0.2}, {10, 3, 2, 1 - 21.0/45, 3.0 / 45},
	} {
		if got := eval.PassAtK(c.n, c.c, c.k); !near(got, c.atK) {
			t.Errorf("pass@%d n=%d c=%d = %v, want %v", c.k, c.n, c.c, got, c.atK)
		}
		if got := eval.PassHatK(c.n, c.c, c.k); !near(got, c.hatK) {
			t.Errorf("pass^%d n=%d c=%d = %v, want %v", c.k, c.n, c.c, got, c.hatK)
		}
	}
}

func TestBootstrapIsSeededAndCoversTheMean(t *testing.T) {
	xs := []float64{0.1, 0.9, 0.4, 0.6, 0.5, 0.3, 0.8, 0.2}
	a, b := eval.BootstrapMean(xs, 7), eval.BootstrapMean(xs, 7)
	if a != b {
		t.Fatal("the same seed gave two intervals")
	}
	if !near(a.Value, 0.475) || a.Low >= a.Value || a.High <= a.Value || a.Low < 0.1 || a.High > 0.9 {
		t.Fatalf("interval %+v", a)
	}
	if c := eval.BootstrapMean([]float64{0.5}, 1); c.Low != 0.5 || c.High != 0.5 {
		t.Fatalf("one value: %+v", c)
	}
}

// scoreDataset has cases whose score is fixed by their metadata.
func scoreDataset(scores map[string]any) *eval.Dataset {
	ds := &eval.Dataset{Name: "scores", Criteria: []eval.Criterion{{Evaluator: "test_meta_score", Threshold: threshold(0.5)}}}
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if v, ok := scores[id]; ok {
			ds.Cases = append(ds.Cases, eval.Case{ID: id, Input: eval.Input{Message: "hi " + id}, Metadata: map[string]any{"scores": v}})
		}
	}
	return ds
}

func TestRepetitionsAndComparison(t *testing.T) {
	tg := newTarget(t)
	base, err := (&eval.Runner{Target: tg, Experiment: "base", Repeat: 3}).Run(context.Background(), scoreDataset(map[string]any{
		"a": []any{0.9}, "b": []any{0.9}, "c": []any{0.2}, "d": []any{0.9, 0.1, 0.9},
		"e": []any{0.8}, "f": []any{0.7}, "g": []any{0.9}, "h": []any{0.6},
	}))
	if err != nil {
		t.Fatal(err)
	}
	d := base.Cases[3]
	if d.Pass || d.Passed != 2 || !near(d.Consistency, 2.0/3) {
		t.Fatalf("flaky case: %+v", d)
	}
	s := base.Summary
	// 8 cases × 3: d passes 2 of 3, c none; pass@3 counts d, pass^3 does not.
	if s.K != 3 || !near(s.PassAtK, 7.0/8) || !near(s.PassHatK, 6.0/8) || s.TrialsPassed != 20 || s.CasesPassed != 6 {
		t.Fatalf("summary %+v", s)
	}
	if !near(s.PassRate.Value, 20.0/24) || s.PassRate.Low >= s.PassRate.Value || len(s.Criteria) != 1 || len(s.Criteria[0].Scores) != 24 {
		t.Fatalf("pass rate %+v criteria %+v", s.PassRate, s.Criteria)
	}

	cur, err := (&eval.Runner{Target: tg, Experiment: "cur", Repeat: 3}).Run(context.Background(), scoreDataset(map[string]any{
		"a": []any{0.1}, "b": []any{0.2}, "c": []any{0.9}, "d": []any{0.1},
		"e": []any{0.2}, "f": []any{0.1}, "g": []any{0.3}, "h": []any{0.2},
	}))
	if err != nil {
		t.Fatal(err)
	}
	cmp := eval.Compare(base, cur, 1)
	if !slices.Equal(cmp.Regressions, []string{"a", "b", "e", "f", "g", "h"}) || !slices.Equal(cmp.Improvements, []string{"c"}) {
		t.Fatalf("regressions %v improvements %v", cmp.Regressions, cmp.Improvements)
	}
	if !cmp.Significant || cmp.MeanDelta.Value >= 0 || cmp.MeanDelta.High >= 0 || cmp.PValue > 0.05 {
		t.Fatalf("a large drop is not significant: %+v p=%v", cmp.MeanDelta, cmp.PValue)
	}
	if again := eval.Compare(base, cur, 1); again.MeanDelta != cmp.MeanDelta || again.PValue != cmp.PValue {
		t.Fatal("the comparison is not deterministic")
	}
	same := eval.Compare(base, base, 1)
	if same.Significant || same.PValue != 1 || len(same.Regressions) != 0 {
		t.Fatalf("an experiment against itself: %+v", same)
	}

	// The JSON round trip keeps what a baseline needs.
	path := filepath.Join(t.TempDir(), "base.json")
	var buf bytes.Buffer
	if err := eval.WriteExperiment(&buf, base); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := eval.ReadExperiment(path)
	if err != nil {
		t.Fatal(err)
	}
	if c := eval.Compare(back, cur, 1); c.MeanDelta != cmp.MeanDelta || !slices.Equal(c.Regressions, cmp.Regressions) {
		t.Fatalf("comparison against the read-back baseline differs: %+v", c.MeanDelta)
	}
	if err := os.WriteFile(path, []byte(`{"x":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := eval.ReadExperiment(path); err == nil || !strings.Contains(err.Error(), "not an experiment") {
		t.Fatalf("not an experiment: %v", err)
	}
}
