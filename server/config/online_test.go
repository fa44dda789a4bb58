package config

import (
	"strings"
	"testing"
)

func TestOnlineEvaluatorsParse(t *testing.T) {
	src := `models:
  judge: openai:gpt-4o-mini
assistants:
  - name: E
    graph: echo
    online_evaluators:
      - criterion: {evaluator: contains, params: {values: [hello]}}
        sample: 0.25
      - key: polite
        sample: 1
        criterion:
          evaluator: llm_judge
          threshold: 0.5
          params: {model: judge, rubric: "is polite"}
`
	f, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	oe := f.Assistants[0].OnlineEvaluators
	if len(oe) != 2 || oe[0].Sample != 0.25 || oe[0].FeedbackKey() != "contains" || oe[1].FeedbackKey() != "polite" {
		t.Fatalf("online evaluators %+v", oe)
	}
	c, err := oe[1].EvalCriterion()
	if err != nil || c.Evaluator != "llm_judge" || c.ThresholdOrDefault() != 0.5 || !strings.Contains(string(c.Params), `"rubric":"is polite"`) {
		t.Fatalf("criterion %+v, %v", c, err)
	}
}

func TestBadOnlineEvaluatorsNameTheField(t *testing.T) {
	head := "assistants:\n  - name: E\n    graph: echo\n    online_evaluators:\n"
	for _, c := range []struct{ src, want string }{
		{"      - {criterion: {evaluator: nope}, sample: 1}\n", `assistants[0].online_evaluators[0].criterion: eval: no evaluator "nope"`},
		{"      - {criterion: {evaluator: contains, params: {values: [x]}}, sample: 1.5}\n", "assistants[0].online_evaluators[0].sample: 1.5 is not a share of runs between 0 and 1"},
		{"      - {criterion: {evaluator: contains, params: {values: [x]}}, sample: -0.1}\n", "online_evaluators[0].sample: -0.1"},
		{"      - {sample: 1}\n", "online_evaluators[0].criterion: required"},
		{"      - {criterion: {evaluator: contains, bogus: 1}, sample: 1}\n", "online_evaluators[0].criterion:"},
		{"      - {criterion: {evaluator: contains, params: {values: [x]}}, sample: 1}\n      - {criterion: {evaluator: contains, params: {values: [y]}}, sample: 1}\n",
			`online_evaluators[1].key: "contains" is also the key of online_evaluators[0]`},
		{"      - {criterion: {evaluator: llm_judge, params: {model: big, rubric: r}}, sample: 1}\n",
			`online_evaluators[0].criterion.params.model: judge model "big" is not a name under models (none are declared)`},
		{"      - {criterion: {evaluator: llm_judge, params: {rubric: r}}, sample: 1}\n", `judge model "default" is not a name under models`},
		{"      - {criterion: {evaluator: contains}, rate: 1}\n", `unknown field "rate" (known: criterion, sample, key)`},
	} {
		_, err := Parse([]byte(head+c.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.src, err, c.want)
		}
	}
}
