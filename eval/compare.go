package eval

import (
	"math/rand/v2"
	"slices"
)

// Comparison sets an experiment against a baseline experiment, case by
// case (by case ID).
type Comparison struct {
	// Baseline names the baseline experiment.
	Baseline string `json:"baseline"`
	// Cases are the cases both ran, in the current experiment's order.
	Cases []CaseDelta `json:"cases"`
	// Regressions are the IDs of cases that passed in the baseline and
	// fail now; Improvements the reverse.
	Regressions  []string `json:"regressions,omitempty"`
	Improvements []string `json:"improvements,omitempty"`
	// OnlyCurrent and OnlyBaseline are cases one side did not run.
	OnlyCurrent  []string `json:"only_current,omitempty"`
	OnlyBaseline []string `json:"only_baseline,omitempty"`
	// MeanDelta is the mean over common cases of (current − baseline)
	// mean score, with a 95 % paired bootstrap interval.
	MeanDelta Interval `json:"mean_delta"`
	// PValue is the paired bootstrap's two-sided p-value for "no
	// difference": twice the share of resamples on the far side of 0.
	PValue float64 `json:"p_value"`
	// Significant is true when the interval excludes 0.
	Significant bool `json:"significant"`
	// Seed and Resamples make the bootstrap reproducible.
	Seed      uint64 `json:"seed"`
	Resamples int    `json:"resamples"`
}

// CaseDelta is one case in both experiments.
type CaseDelta struct {
	ID string `json:"id"`
	// BaseScore and Score are the case's mean scores; BasePass and Pass
	// whether every repetition passed.
	BaseScore float64 `json:"base_score"`
	Score     float64 `json:"score"`
	BasePass  bool    `json:"base_pass"`
	Pass      bool    `json:"pass"`
	// Change is "regression", "improvement" or "".
	Change string `json:"change,omitempty"`
}

// Compare compares cur with base: the cases' pass/fail changes and a paired
// bootstrap over the common cases' mean scores, seeded with seed (the same
// experiments and seed give the same result).
func Compare(base, cur *Experiment, seed uint64) *Comparison {
	c := &Comparison{Baseline: base.Name, Seed: seed, Resamples: bootstrapResamples}
	bases := map[string]*CaseResult{}
	for i := range base.Cases {
		if len(base.Cases[i].Trials) > 0 {
			bases[base.Cases[i].ID] = &base.Cases[i]
		}
	}
	seen := map[string]bool{}
	var diffs []float64
	for _, cr := range cur.Cases {
		if len(cr.Trials) == 0 {
			continue
		}
		seen[cr.ID] = true
		b, ok := bases[cr.ID]
		if !ok {
			c.OnlyCurrent = append(c.OnlyCurrent, cr.ID)
			continue
		}
		d := CaseDelta{ID: cr.ID, BaseScore: b.MeanScore, Score: cr.MeanScore, BasePass: b.Pass, Pass: cr.Pass}
		switch {
		case b.Pass && !cr.Pass:
			d.Change = "regression"
			c.Regressions = append(c.Regressions, cr.ID)
		case !b.Pass && cr.Pass:
			d.Change = "improvement"
			c.Improvements = append(c.Improvements, cr.ID)
		}
		c.Cases = append(c.Cases, d)
		diffs = append(diffs, cr.MeanScore-b.MeanScore)
	}
	for _, b := range base.Cases {
		if len(b.Trials) > 0 && !seen[b.ID] {
			c.OnlyBaseline = append(c.OnlyBaseline, b.ID)
		}
	}
	c.MeanDelta, c.PValue = pairedBootstrap(diffs, seed)
	c.Significant = len(diffs) > 1 && (c.MeanDelta.Low > 0 || c.MeanDelta.High < 0)
	return c
}

// pairedBootstrap resamples the per-case differences: the mean with its
// percentile interval, and the two-sided p-value of a zero mean.
func pairedBootstrap(diffs []float64, seed uint64) (Interval, float64) {
	if len(diffs) == 0 {
		return Interval{}, 1
	}
	m := mean(diffs)
	if len(diffs) < 2 {
		return Interval{Value: m, Low: m, High: m}, 1
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	means := make([]float64, bootstrapResamples)
	below, above := 0, 0
	for b := range means {
		var sum float64
		for range diffs {
			sum += diffs[rng.IntN(len(diffs))]
		}
		means[b] = sum / float64(len(diffs))
		if means[b] <= 0 {
			below++
		}
		if means[b] >= 0 {
			above++
		}
	}
	slices.Sort(means)
	p := 2 * float64(min(below, above)) / float64(len(means))
	return Interval{Value: m, Low: percentile(means, 0.025), High: percentile(means, 0.975)}, min(p, 1)
}
