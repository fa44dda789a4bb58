package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/eval"
	_ "github.com/trellis-agents/trellis/eval/evaluators" // the evaluator names criteria may use
)

// OnlineEvaluator scores a sample of an assistant's finished runs, in
// trellis.yaml under assistants[].online_evaluators:
//
//	online_evaluators:
//	  - key: mentions_refund
//	    sample: 0.1
//	    criterion: {evaluator: contains, params: {values: [refund]}}
//
// A run that finished successfully is scored when it falls in the sample
// (decided by a hash of its ID and the key, so the same run is always in
// or out), and the score is stored as the run's feedback under key. See
// docs/eval.md, "Online evaluators".
type OnlineEvaluator struct {
	// Criterion is a dataset criterion (evaluator, threshold, params),
	// written as YAML.
	Criterion map[string]any `yaml:"criterion"`
	// Sample is the share of runs scored, 0 to 1.
	Sample float64 `yaml:"sample"`
	// Key is the feedback key the score is stored under (default: the
	// evaluator's name).
	Key string `yaml:"key"`
}

// EvalCriterion decodes Criterion as eval.DecodeCriterion does (unknown
// fields refused, the evaluator registered and its params accepted).
func (o OnlineEvaluator) EvalCriterion() (eval.Criterion, error) {
	if len(o.Criterion) == 0 {
		return eval.Criterion{}, fmt.Errorf("required: a criterion such as {evaluator: contains, params: {text: ...}}")
	}
	b, err := json.Marshal(o.Criterion)
	if err != nil {
		return eval.Criterion{}, fmt.Errorf("not representable as JSON: %w", err)
	}
	return eval.DecodeCriterion(b)
}

// FeedbackKey is Key, or the criterion's evaluator name when Key is "".
func (o OnlineEvaluator) FeedbackKey() string {
	if k := strings.TrimSpace(o.Key); k != "" {
		return k
	}
	name, _ := o.Criterion["evaluator"].(string)
	return name
}

// checkOnline validates an assistant's online evaluators; field is the
// assistant's path (assistants[i]).
func (f *File) checkOnline(field string, list []OnlineEvaluator) []error {
	var errs []error
	bad := func(sub, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", sub, fmt.Sprintf(format, args...)))
	}
	keys := map[string]int{}
	for i, o := range list {
		of := fmt.Sprintf("%s.online_evaluators[%d]", field, i)
		if math.IsNaN(o.Sample) || o.Sample < 0 || o.Sample > 1 {
			bad(of+".sample", "%v is not a share of runs between 0 and 1 (0.1 scores one run in ten)", o.Sample)
		}
		c, err := o.EvalCriterion()
		if err != nil {
			bad(of+".criterion", "%v", err)
			continue
		}
		key := o.FeedbackKey()
		if len(key) > 256 {
			bad(of+".key", "longer than 256 characters")
		}
		if j, dup := keys[key]; dup {
			bad(of+".key", "%q is also the key of online_evaluators[%d]; give each a key of its own", key, j)
		}
		keys[key] = i
		if c.Evaluator == "llm_judge" {
			var p struct {
				Model string `json:"model"`
			}
			_ = json.Unmarshal(c.Params, &p) // the evaluator accepted the params above
			model := p.Model
			if model == "" {
				model = "default"
			}
			if _, ok := f.Models[model]; !ok {
				bad(of+".criterion.params.model", "judge model %q is not a name under models%s; a judge runs only on a model the operator declared",
					model, modelNames(f.Models))
			}
		}
	}
	return errs
}

// modelNames lists the declared model names for an error, " (declared:
// a, b)" or " (none are declared)".
func modelNames(m map[string]ModelEntry) string {
	if len(m) == 0 {
		return " (none are declared)"
	}
	return " (declared: " + strings.Join(slices.Sorted(maps.Keys(m)), ", ") + ")"
}
