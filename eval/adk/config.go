package adk

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/trellis-agents/trellis/eval"
)

// ADK metric names this package maps.
const (
	MetricToolTrajectory    = "tool_trajectory_avg_score"
	MetricResponseMatch     = "response_match_score"
	MetricResponseEval      = "response_evaluation_score"
	MetricFinalResponseV2   = "final_response_match_v2"
	MetricRubricResponseV1  = "rubric_based_final_response_quality_v1"
	MetricRubricToolUseV1   = "rubric_based_tool_use_quality_v1"
	defaultTrajectoryThresh = 1.0
	defaultResponseThresh   = 0.8
)

// Rubrics of the judge-based metrics, in Trellis's words.
const (
	rubricFinalMatch = "The final response says the same thing as the reference answer: the same facts and conclusions, " +
		"whatever the wording or format. A response that misses or contradicts part of the reference does not match."
	rubricCoherence = "The response is coherent: it follows from the request and the tool results, is logically ordered, " +
		"and reads as one consistent answer."
)

// DefaultCriteria are ADK's default criteria, used when no test_config.json
// is beside a set: the tool trajectory must match exactly in every
// invocation, and the responses must reach a mean ROUGE-1 F of 0.8.
func DefaultCriteria() []eval.Criterion {
	return []eval.Criterion{
		trajectoryCriterion(defaultTrajectoryThresh, "", false),
		{Evaluator: "response_match", Threshold: ptr(defaultResponseThresh)},
	}
}

func ptr(f float64) *float64 { return &f }

func trajectoryCriterion(threshold float64, match string, ignoreArgs bool) eval.Criterion {
	p := map[string]string{"match": "strict"}
	switch match {
	case "IN_ORDER":
		p["match"] = "in_order"
	case "ANY_ORDER":
		p["match"] = "superset"
	}
	if ignoreArgs {
		p["args"] = "ignore"
	}
	return eval.Criterion{Evaluator: "tool_trajectory", Threshold: ptr(threshold), Params: mustJSON(p)}
}

// ParseConfig reads a test_config.json (ADK's EvalConfig): {"criteria":
// {metric: threshold or criterion object}}. Metrics map to evaluators:
//
//   - tool_trajectory_avg_score → tool_trajectory, per invocation,
//     match_type EXACT (default) → strict, IN_ORDER → in_order, ANY_ORDER
//     → superset; ignore_args → args "ignore";
//   - response_match_score → response_match (ROUGE-1 F, mean over
//     invocations);
//   - final_response_match_v2 → llm_judge on a 0–1 scale with a
//     reference-match rubric and judge_model_options.judge_model as model;
//   - rubric_based_final_response_quality_v1 and
//     rubric_based_tool_use_quality_v1 → llm_judge with the rubrics' texts
//     (the tool-use one sees the trajectory);
//   - response_evaluation_score (coherence, 1–5) → llm_judge on a 1–5
//     scale, its threshold rescaled to [0, 1].
//
// Any other metric (safety_v1, hallucinations_v1, custom metrics…) is an
// error naming it, rather than a criterion silently dropped.
func ParseConfig(data []byte) ([]eval.Criterion, error) {
	cfg, err := fields(data, "test_config")
	if err != nil {
		return nil, err
	}
	if !present(cfg, "criteria") {
		return DefaultCriteria(), nil
	}
	var crit map[string]json.RawMessage
	if err := json.Unmarshal(cfg["criteria"], &crit); err != nil {
		return nil, fmt.Errorf("adk: test_config: criteria: want an object of metric → threshold or criterion: %w", err)
	}
	names := make([]string, 0, len(crit))
	for n := range crit {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []eval.Criterion
	var unsupported []string
	for _, name := range names {
		c, ok, err := metric(name, crit[name])
		if err != nil {
			return nil, err
		}
		if !ok {
			unsupported = append(unsupported, name)
			continue
		}
		out = append(out, c)
	}
	if len(unsupported) > 0 {
		return nil, fmt.Errorf("adk: test_config: no Trellis evaluator for ADK metric(s) %s (supported: %s, %s, %s, %s, %s, %s)",
			strings.Join(unsupported, ", "), MetricToolTrajectory, MetricResponseMatch, MetricFinalResponseV2,
			MetricRubricResponseV1, MetricRubricToolUseV1, MetricResponseEval)
	}
	return out, nil
}

// criterionObject is ADK's criterion object, the fields this package reads.
type criterionObject struct {
	Threshold         *float64 `json:"threshold"`
	MatchType         any      `json:"match_type"`
	IgnoreArgs        bool     `json:"ignore_args"`
	JudgeModelOptions *struct {
		JudgeModel string `json:"judge_model"`
	} `json:"judge_model_options"`
	Rubrics []struct {
		RubricID      string `json:"rubric_id"`
		RubricContent struct {
			TextProperty string `json:"text_property"`
		} `json:"rubric_content"`
	} `json:"rubrics"`
}

func metric(name string, raw json.RawMessage) (eval.Criterion, bool, error) {
	var obj criterionObject
	var threshold float64
	if err := json.Unmarshal(raw, &threshold); err != nil {
		// The object form, with camelCase aliases read as snake_case.
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return eval.Criterion{}, false, fmt.Errorf("adk: test_config: %s: want a threshold or a criterion object", name)
		}
		// A criterion object holds no user data: every key may be snake-cased.
		if err := json.Unmarshal(mustJSON(snakeKeys(m)), &obj); err != nil {
			return eval.Criterion{}, false, fmt.Errorf("adk: test_config: %s: %w", name, err)
		}
		if obj.Threshold == nil {
			return eval.Criterion{}, false, fmt.Errorf("adk: test_config: %s: the criterion has no threshold", name)
		}
		threshold = *obj.Threshold
	}
	judge := func(rubric string, min, max int, trajectory bool) eval.Criterion {
		p := map[string]any{"rubric": rubric, "scale": map[string]int{"min": min, "max": max}}
		if obj.JudgeModelOptions != nil && obj.JudgeModelOptions.JudgeModel != "" {
			p["model"] = obj.JudgeModelOptions.JudgeModel
		}
		if trajectory {
			p["trajectory"] = true
		}
		return eval.Criterion{Evaluator: "llm_judge", Threshold: ptr(threshold), Params: mustJSON(p)}
	}
	switch name {
	case MetricToolTrajectory:
		match := ""
		switch v := obj.MatchType.(type) {
		case nil:
		case string:
			match = strings.ToUpper(strings.NewReplacer("-", "_", " ", "_").Replace(strings.TrimSpace(v)))
		case float64: // the enum's value
			match = map[float64]string{0: "EXACT", 1: "IN_ORDER", 2: "ANY_ORDER"}[v]
		}
		switch match {
		case "", "EXACT", "IN_ORDER", "ANY_ORDER":
		default:
			return eval.Criterion{}, false, fmt.Errorf("adk: test_config: %s: unknown match_type %v (EXACT, IN_ORDER or ANY_ORDER)", name, obj.MatchType)
		}
		return trajectoryCriterion(threshold, match, obj.IgnoreArgs), true, nil
	case MetricResponseMatch:
		return eval.Criterion{Evaluator: "response_match", Threshold: ptr(threshold)}, true, nil
	case MetricFinalResponseV2:
		return judge(rubricFinalMatch, 0, 1, false), true, nil
	case MetricRubricResponseV1, MetricRubricToolUseV1:
		if len(obj.Rubrics) == 0 {
			return eval.Criterion{}, false, fmt.Errorf("adk: test_config: %s needs rubrics", name)
		}
		var b strings.Builder
		b.WriteString("Each of these must hold:\n")
		for _, r := range obj.Rubrics {
			fmt.Fprintf(&b, "- %s\n", r.RubricContent.TextProperty)
		}
		return judge(strings.TrimSpace(b.String()), 0, 1, name == MetricRubricToolUseV1), true, nil
	case MetricResponseEval:
		c := judge(rubricCoherence, 1, 5, true)
		c.Threshold = ptr(max(0, (threshold-1)/4))
		return c, true, nil
	}
	return eval.Criterion{}, false, nil
}

// ExportConfig writes criteria as a test_config.json. Only criteria with an
// ADK metric of the same meaning are written: tool_trajectory in a mode
// ADK has (strict, in_order, superset; args exact or ignore) and
// response_match; the others are returned in dropped, with why.
func ExportConfig(criteria []eval.Criterion) (data []byte, dropped []string, err error) {
	out := object{}
	for _, c := range criteria {
		switch c.Evaluator {
		case "tool_trajectory":
			var p struct{ Match, Args string }
			if len(c.Params) > 0 {
				if err := json.Unmarshal(c.Params, &p); err != nil {
					return nil, nil, fmt.Errorf("adk: tool_trajectory params: %w", err)
				}
			}
			match := map[string]string{"": "EXACT", "strict": "EXACT", "exact": "EXACT", "in_order": "IN_ORDER", "superset": "ANY_ORDER"}[strings.ToLower(p.Match)]
			if match == "" {
				match = map[string]string{"EXACT": "EXACT", "IN_ORDER": "IN_ORDER", "ANY_ORDER": "ANY_ORDER"}[strings.ToUpper(p.Match)]
			}
			args := strings.ToLower(p.Args)
			if match == "" || (args != "" && args != "exact" && args != "ignore") {
				dropped = append(dropped, fmt.Sprintf("tool_trajectory (match %q, args %q): ADK has no such match", p.Match, p.Args))
				continue
			}
			if match == "EXACT" && args != "ignore" {
				out.set(MetricToolTrajectory, mustJSON(c.ThresholdOrDefault()))
				continue
			}
			o := object{{"threshold", mustJSON(c.ThresholdOrDefault())}, {"match_type", mustJSON(match)}}
			if args == "ignore" {
				o = append(o, member{"ignore_args", mustJSON(true)})
			}
			out.set(MetricToolTrajectory, mustJSON(o))
		case "response_match":
			out.set(MetricResponseMatch, mustJSON(c.ThresholdOrDefault()))
		default:
			dropped = append(dropped, c.Evaluator+": no ADK metric of the same meaning")
		}
	}
	b, err := json.MarshalIndent(object{{"criteria", mustJSON(out)}}, "", "  ")
	return b, dropped, err
}

// snakeKeys snake-cases every object key in v, recursively.
func snakeKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[snake(k)] = snakeKeys(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = snakeKeys(e)
		}
		return out
	}
	return v
}
