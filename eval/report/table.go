package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/trellis-agents/trellis/eval"
)

// Table writes exp for a terminal: one row per case (passes of the
// repetitions, mean score, each criterion's mean score, the first failure),
// then the summary with its intervals, and the comparison when there is
// one.
func Table(w io.Writer, exp *eval.Experiment) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	crit := exp.Summary.Criteria
	head := []string{"CASE", "RESULT", "PASSED", "SCORE"}
	for _, c := range crit {
		head = append(head, strings.ToUpper(c.Evaluator))
	}
	head = append(head, "WHY")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, c := range exp.Cases {
		res := "pass"
		if !c.Pass {
			res = "FAIL"
		}
		row := []string{c.ID, res, fmt.Sprintf("%d/%d", c.Passed, len(c.Trials)), fmt.Sprintf("%.2f", c.MeanScore)}
		for _, cs := range crit {
			row = append(row, criterionMean(c, cs.Evaluator))
		}
		row = append(row, firstFailure(c))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := exp.Summary
	fmt.Fprintf(w, "\n%d of %d cases passed (%s); repetitions %d of %d (%s)\n", s.CasesPassed, s.Cases, pct(s.CasePassRate), s.TrialsPassed, s.Trials, pct(s.PassRate))
	if exp.Repeat > 1 {
		fmt.Fprintf(w, "pass@%d %.3f, pass^%d %.3f, consistency %.3f\n", s.K, s.PassAtK, s.K, s.PassHatK, s.Consistency)
	}
	for _, c := range crit {
		fmt.Fprintf(w, "  %-24s pass %s, mean score %.3f [%.3f, %.3f]", c.Evaluator, pct(c.PassRate), c.MeanScore.Value, c.MeanScore.Low, c.MeanScore.High)
		if c.Errors > 0 {
			fmt.Fprintf(w, ", %d could not score", c.Errors)
		}
		fmt.Fprintln(w)
	}
	if cmp := exp.Comparison; cmp != nil {
		fmt.Fprintf(w, "\nAgainst %s: mean score change %+.3f [%+.3f, %+.3f], p = %.3f%s; %d regressions, %d improvements\n",
			cmp.Baseline, cmp.MeanDelta.Value, cmp.MeanDelta.Low, cmp.MeanDelta.High, cmp.PValue, sig(cmp.Significant), len(cmp.Regressions), len(cmp.Improvements))
		if len(cmp.Regressions) > 0 {
			fmt.Fprintf(w, "  regressions: %s\n", strings.Join(cmp.Regressions, ", "))
		}
		if len(cmp.Improvements) > 0 {
			fmt.Fprintf(w, "  improvements: %s\n", strings.Join(cmp.Improvements, ", "))
		}
	}
	return nil
}

func sig(b bool) string {
	if b {
		return " (significant)"
	}
	return " (not significant)"
}

func pct(iv eval.Interval) string {
	return fmt.Sprintf("%.1f%% [%.1f, %.1f]", 100*iv.Value, 100*iv.Low, 100*iv.High)
}

// criterionMean is the case's mean score for one evaluator, "-" when the
// case does not use it.
func criterionMean(c eval.CaseResult, name string) string {
	var sum float64
	n := 0
	for _, t := range c.Trials {
		for _, s := range t.Scores {
			if s.Evaluator == name {
				sum += s.Score
				n++
			}
		}
	}
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", sum/float64(n))
}

// firstFailure says in one short line why the case failed.
func firstFailure(c eval.CaseResult) string {
	for _, t := range c.Trials {
		if t.Pass {
			continue
		}
		why := t.Error
		if why == "" {
			for _, s := range t.Scores {
				if !s.Pass {
					why = s.Evaluator + ": " + s.Explanation
					if s.Error != "" {
						why = s.Evaluator + ": " + s.Error
					}
					break
				}
			}
		}
		why = strings.Join(strings.Fields(why), " ")
		if len(why) > 90 {
			why = why[:90] + "…"
		}
		return why
	}
	return ""
}
