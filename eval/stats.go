package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/trellis-agents/trellis/llm"
)

// Interval is an estimate with its 95 % confidence interval.
type Interval struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// Summary aggregates an experiment.
type Summary struct {
	// Cases and CasesPassed count the cases, and those whose every
	// repetition passed.
	Cases       int `json:"cases"`
	CasesPassed int `json:"cases_passed"`
	// Trials and TrialsPassed count the case repetitions.
	Trials       int `json:"trials"`
	TrialsPassed int `json:"trials_passed"`
	// CasePassRate is CasesPassed/Cases with its Wilson interval.
	CasePassRate Interval `json:"case_pass_rate"`
	// PassRate is TrialsPassed/Trials with its Wilson interval.
	PassRate Interval `json:"pass_rate"`
	// K is the repetitions per case; PassAtK is the mean over cases of
	// the chance that at least one of k repetitions passes, PassHatK
	// (pass^k) that all k pass, both estimated from each case's n
	// repetitions without bias (equal to "any passed" and "all passed"
	// when k = n).
	K        int     `json:"k"`
	PassAtK  float64 `json:"pass_at_k"`
	PassHatK float64 `json:"pass_hat_k"`
	// Consistency is the mean of the cases' consistency.
	Consistency float64 `json:"consistency"`
	// MeanScore is the mean trial score with a bootstrap interval.
	MeanScore Interval `json:"mean_score"`
	// Criteria summarize each evaluator, in order of first use.
	Criteria []CriterionSummary `json:"criteria"`
	// Latency is the mean trial latency; Usage sums the trials'.
	Latency time.Duration `json:"latency"`
	Usage   llm.Usage     `json:"usage,omitzero"`
}

// CriterionSummary aggregates one evaluator over every trial it scored.
type CriterionSummary struct {
	Evaluator string `json:"evaluator"`
	// Trials, Passed and Errors count the verdicts, the passing ones and
	// those where the evaluator could not score.
	Trials int `json:"trials"`
	Passed int `json:"passed"`
	Errors int `json:"errors"`
	// PassRate has a Wilson interval; MeanScore a bootstrap one.
	PassRate  Interval `json:"pass_rate"`
	MeanScore Interval `json:"mean_score"`
	// Scores are the scores, in case and repetition order (for
	// distributions).
	Scores []float64 `json:"scores"`
}

// bootstrapResamples and bootstrapSeed make every interval reproducible.
const (
	bootstrapResamples = 2000
	bootstrapSeed      = 1
)

// Summarize computes the cases' aggregates and the Summary from the trials
// (Run does; call it after changing Cases by hand, say to merge or
// filter experiments).
func (e *Experiment) Summarize() {
	s := Summary{K: e.Repeat}
	byName := map[string]int{}
	var scores []float64
	var latency time.Duration
	for i := range e.Cases {
		cr := &e.Cases[i]
		cr.Passed, cr.MeanScore = 0, 0
		for _, t := range cr.Trials {
			s.Trials++
			if t.Pass {
				cr.Passed++
			}
			cr.MeanScore += t.MeanScore()
			scores = append(scores, t.MeanScore())
			latency += t.Latency
			s.Usage = s.Usage.Add(t.Usage)
			for _, c := range t.Scores {
				k, ok := byName[c.Evaluator]
				if !ok {
					k = len(s.Criteria)
					byName[c.Evaluator] = k
					s.Criteria = append(s.Criteria, CriterionSummary{Evaluator: c.Evaluator})
				}
				cs := &s.Criteria[k]
				cs.Trials++
				if c.Pass {
					cs.Passed++
				}
				if c.Error != "" {
					cs.Errors++
				}
				cs.Scores = append(cs.Scores, c.Score)
			}
		}
		n := len(cr.Trials)
		s.TrialsPassed += cr.Passed
		cr.Pass = n > 0 && cr.Passed == n
		if n > 0 {
			cr.MeanScore /= float64(n)
			cr.Consistency = float64(max(cr.Passed, n-cr.Passed)) / float64(n)
			s.Cases++
			if cr.Pass {
				s.CasesPassed++
			}
			k := min(e.Repeat, n)
			s.PassAtK += PassAtK(n, cr.Passed, k)
			s.PassHatK += PassHatK(n, cr.Passed, k)
			s.Consistency += cr.Consistency
		}
	}
	if s.Cases > 0 {
		s.PassAtK /= float64(s.Cases)
		s.PassHatK /= float64(s.Cases)
		s.Consistency /= float64(s.Cases)
	}
	if s.Trials > 0 {
		s.Latency = latency / time.Duration(s.Trials)
	}
	s.CasePassRate = Wilson(s.CasesPassed, s.Cases)
	s.PassRate = Wilson(s.TrialsPassed, s.Trials)
	s.MeanScore = BootstrapMean(scores, bootstrapSeed)
	for i := range s.Criteria {
		cs := &s.Criteria[i]
		cs.PassRate = Wilson(cs.Passed, cs.Trials)
		cs.MeanScore = BootstrapMean(cs.Scores, bootstrapSeed)
	}
	e.Summary = s
}

// Wilson returns the share k/n with its 95 % Wilson score interval, which
// stays inside [0, 1] and is sensible for small n and for 0 or n
// successes. With n = 0 it is all zeros.
func Wilson(k, n int) Interval {
	if n <= 0 {
		return Interval{}
	}
	const z = 1.959963984540054
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	centre := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return Interval{Value: p, Low: math.Max(0, centre-half), High: math.Min(1, centre+half)}
}

// BootstrapMean returns the mean of xs with a 95 % percentile bootstrap
// interval from 2000 resamples drawn with the given seed (the same input
// and seed give the same interval). With fewer than two values the
// interval is the mean itself.
func BootstrapMean(xs []float64, seed uint64) Interval {
	if len(xs) == 0 {
		return Interval{}
	}
	m := mean(xs)
	if len(xs) < 2 {
		return Interval{Value: m, Low: m, High: m}
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	means := make([]float64, bootstrapResamples)
	for b := range means {
		var sum float64
		for range xs {
			sum += xs[rng.IntN(len(xs))]
		}
		means[b] = sum / float64(len(xs))
	}
	slices.Sort(means)
	return Interval{Value: m, Low: percentile(means, 0.025), High: percentile(means, 0.975)}
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// percentile reads the p-quantile of sorted xs by linear interpolation.
func percentile(sorted []float64, p float64) float64 {
	pos := p * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

// PassAtK is the unbiased estimate, from n repetitions of which c passed,
// of the chance that at least one of k repetitions passes:
// 1 − C(n−c, k)/C(n, k). k is clamped to [1, n].
func PassAtK(n, c, k int) float64 {
	if n <= 0 {
		return 0
	}
	k = min(max(k, 1), n)
	if n-c < k {
		return 1
	}
	return 1 - ratioChoose(n-c, n, k)
}

// PassHatK (pass^k) is the unbiased estimate, from n repetitions of which
// c passed, of the chance that all of k repetitions pass: C(c, k)/C(n, k).
// k is clamped to [1, n].
func PassHatK(n, c, k int) float64 {
	if n <= 0 {
		return 0
	}
	k = min(max(k, 1), n)
	if c < k {
		return 0
	}
	return ratioChoose(c, n, k)
}

// ratioChoose is C(a, k)/C(b, k) for a ≤ b, as a product that does not
// overflow.
func ratioChoose(a, b, k int) float64 {
	r := 1.0
	for i := range k {
		r *= float64(a-i) / float64(b-i)
	}
	return r
}
