package evaluators_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaltest"
	"github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

func judgeTrial() eval.Trial {
	c := &eval.Case{Expect: eval.Expectations{Rubric: "The answer names the capital of France."}}
	th := evaltest.NewThread().User("Capital of France?").Call("lookup", `{"country":"FR"}`, "Paris").Assistant("Paris.").Build()
	return evaltest.Trial(c, th)
}

func TestLLMJudge(t *testing.T) {
	judge := evaltest.Judge(evaltest.Verdict(4, "Names Paris, briefly."))
	ctx := evaltest.WithJudge(context.Background(), judge)
	s, err := evaltest.Evaluate(ctx, "llm_judge", `{"trajectory":true}`, judgeTrial())
	if err != nil {
		t.Fatal(err)
	}
	if s.Value != 0.75 || !strings.Contains(s.Explanation, "Names Paris") {
		t.Fatalf("score %+v, want 0.75 ((4-1)/(5-1)) with the reasoning", s)
	}
	req := judge.LastRequest()
	prompt := req.LastUser()
	for _, want := range []string{"The answer names the capital of France.", "User: Capital of France?", "Tool call: lookup", "<final_response>\nParis."} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the judge prompt lacks %q:\n%s", want, prompt)
		}
	}
}

func TestLLMJudgeScaleAndRubricParam(t *testing.T) {
	judge := evaltest.Judge(evaltest.Verdict(0, "Wrong city."))
	ctx := evaltest.WithJudge(context.Background(), judge)
	s, err := evaltest.Evaluate(ctx, "llm_judge", `{"rubric":"Says Lyon.","scale":{"min":0,"max":10}}`, judgeTrial())
	if err != nil || s.Value != 0 {
		t.Fatalf("score %+v, err %v; want 0", s, err)
	}
	last := judge.LastRequest()
	if !strings.Contains(last.LastUser(), "Says Lyon.") {
		t.Fatal("params.rubric must replace the case's rubric")
	}
}

func TestLLMJudgeMalformedReplyIsCorrectedOnce(t *testing.T) {
	judge := evaltest.Judge(llmtest.Text("I think it is fine."), evaltest.Verdict(5, "Correct."))
	ctx := evaltest.WithJudge(context.Background(), judge)
	s, err := evaltest.Evaluate(ctx, "llm_judge", "", judgeTrial())
	if err != nil || s.Value != 1 {
		t.Fatalf("score %+v, err %v; want 1 after one correction", s, err)
	}
	reqs := judge.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d judge requests, want 2", len(reqs))
	}
	if !strings.Contains(reqs[1].LastUser(), "could not be used") {
		t.Fatalf("the second request must carry the correction, got %q", reqs[1].LastUser())
	}
}

func TestLLMJudgeOutOfRangeThenMalformedFails(t *testing.T) {
	judge := evaltest.Judge(evaltest.Verdict(9, "Great."), llmtest.Text("{not json"))
	ctx := evaltest.WithJudge(context.Background(), judge)
	_, err := evaltest.Evaluate(ctx, "llm_judge", "", judgeTrial())
	if err == nil || !strings.Contains(err.Error(), "llm_judge") || !strings.Contains(err.Error(), "llmtest:judge") {
		t.Fatalf("want a clear evaluator error naming the judge, got %v", err)
	}
	if n := len(judge.Requests()); n != 2 {
		t.Fatalf("%d requests, want exactly 2 (one correction)", n)
	}
	if !strings.Contains(judge.Requests()[1].LastUser(), "outside the scale") {
		t.Fatalf("the correction must say the score is out of range: %q", judge.Requests()[1].LastUser())
	}
}

func TestLLMJudgeNeedsResolverAndRubric(t *testing.T) {
	_, err := evaltest.Evaluate(context.Background(), "llm_judge", "", judgeTrial())
	if !errors.Is(err, evaluators.ErrNoJudge) {
		t.Fatalf("want ErrNoJudge, got %v", err)
	}
	ctx := evaltest.WithJudge(context.Background(), evaltest.Judge())
	s, err := evaltest.Evaluate(ctx, "llm_judge", "", evaltest.Trial(&eval.Case{}, evaltest.NewThread().Build()))
	if err != nil || s.Value != 0 || !strings.Contains(s.Explanation, "rubric") {
		t.Fatalf("no rubric: %+v %v", s, err)
	}
	bad := evaluators.WithJudges(context.Background(), func(context.Context, string) (llm.Model, error) { return nil, errors.New("unknown model") })
	if _, err := evaltest.Evaluate(bad, "llm_judge", `{"model":"gpt-x"}`, judgeTrial()); err == nil || !strings.Contains(err.Error(), "gpt-x") {
		t.Fatalf("resolver error must name the model: %v", err)
	}
}

func TestPairwise(t *testing.T) {
	in := evaluators.PairwiseInput{Question: "Capital of France?", A: "Lyon.", B: "Paris."}
	judge := evaltest.PreferJudge(func(r string) bool { return strings.Contains(r, "Paris") })
	p, err := evaluators.Pairwise(context.Background(), judge, in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Winner != evaluators.WinnerB || !p.Consistent {
		t.Fatalf("got %+v, want B, consistent", p)
	}
	reqs := judge.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].LastUser(), "<response_1>\nLyon.") || !strings.Contains(reqs[1].LastUser(), "<response_1>\nParis.") {
		t.Fatal("the two asks must show the outputs in both orders")
	}
	// A judge that always picks the first position gives a tie.
	p, err = evaluators.Pairwise(context.Background(), evaltest.PositionJudge("first"), in)
	if err != nil || p.Winner != evaluators.WinnerTie || p.Consistent {
		t.Fatalf("biased judge: %+v %v; want an inconsistent tie", p, err)
	}
	// Equal outputs.
	p, _ = evaluators.Pairwise(context.Background(), evaltest.PreferJudge(func(string) bool { return true }), in)
	if p.Winner != evaluators.WinnerTie || !p.Consistent {
		t.Fatalf("both preferred: %+v", p)
	}
	// A winner outside first/second/tie is corrected once, then an error.
	bad := evaltest.Judge(llmtest.JSON(map[string]any{"reasoning": "x", "winner": "A"}), llmtest.JSON(map[string]any{"reasoning": "x", "winner": "B"}))
	if _, err := evaluators.Pairwise(context.Background(), bad, in); err == nil || !strings.Contains(err.Error(), "winner") {
		t.Fatalf("want an error about the winner field, got %v", err)
	}
	if _, err := evaluators.Pairwise(context.Background(), nil, in); !errors.Is(err, evaluators.ErrNoJudge) {
		t.Fatalf("nil judge: %v", err)
	}
}
