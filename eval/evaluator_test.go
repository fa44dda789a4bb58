package eval_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/llm"
)

type fixed struct{ v float64 }

func (f fixed) Name() string { return "fixed" }
func (f fixed) Evaluate(context.Context, eval.Trial) (eval.Score, error) {
	return eval.Score{Value: f.v}, nil
}

// registerFixed registers test_fixed once, so the test can run with -count.
var registerFixed sync.Once

func newFixed(p json.RawMessage) (eval.Evaluator, error) {
	var cfg struct{ Value float64 }
	if err := json.Unmarshal(p, &cfg); err != nil {
		return nil, err
	}
	return fixed{cfg.Value}, nil
}

func TestRegistry(t *testing.T) {
	registerFixed.Do(func() { eval.Register("test_fixed", newFixed) })
	if !slices.Contains(eval.Evaluators(), "test_fixed") {
		t.Fatalf("Evaluators() = %v lacks test_fixed", eval.Evaluators())
	}
	e, err := eval.New(eval.Criterion{Evaluator: "test_fixed", Params: json.RawMessage(`{"Value":0.5}`)})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := e.Evaluate(context.Background(), eval.Trial{})
	if s.Value != 0.5 {
		t.Fatalf("score %v, want 0.5", s.Value)
	}
	if _, err := eval.New(eval.Criterion{Evaluator: "test_fixed", Params: json.RawMessage(`[`)}); err == nil || !strings.Contains(err.Error(), "test_fixed") {
		t.Fatalf("bad params: %v", err)
	}
	if _, err := eval.New(eval.Criterion{Evaluator: "nope"}); err == nil || !strings.Contains(err.Error(), "test_fixed") {
		t.Fatalf("unknown evaluator should list the registered ones: %v", err)
	}
	half := 0.5
	if (eval.Criterion{}).ThresholdOrDefault() != 1 || (eval.Criterion{Threshold: &half}).ThresholdOrDefault() != 0.5 {
		t.Fatal("threshold default")
	}
}

func TestFinalResponse(t *testing.T) {
	th := eval.Thread{Messages: []llm.Message{llm.User("hi"), llm.Assistant("first"), llm.Assistant("", llm.ToolCall{ID: "c", Name: "x"})}}
	if got := th.FinalResponse(); got != "first" {
		t.Fatalf("FinalResponse = %q, want the last assistant message with text", got)
	}
}
