package eval_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/eval"
)

// A recorded trial, run again as a case, passes an output check and asks
// the same questions.
func TestRecordReplays(t *testing.T) {
	ds := &eval.Dataset{Name: "rec", Criteria: []eval.Criterion{{Evaluator: "test_seeing"}}, Cases: []eval.Case{
		{ID: "c", Input: eval.Input{Message: "ask bad"}, Answers: []eval.Answer{{Value: raw(`"yes"`)}},
			Turns: []eval.Turn{{Message: "and more"}}},
	}}
	if _, err := (&eval.Runner{Target: newTarget(t), Experiment: "rec"}).Run(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	th := <-seen
	c := eval.Record(th)
	if c.Input.Message != "ask bad" || len(c.Turns) != 1 || c.Turns[0].Message != "and more" {
		t.Fatalf("input and turns: %+v", c)
	}
	if len(c.Answers) != 1 || c.Answers[0].Kind != "confirm" || string(c.Answers[0].Value) != `"yes"` {
		t.Fatalf("answers %+v", c.Answers)
	}
	if string(c.Expect.Output) != `"echo: and more ()"` || len(c.Expect.ToolCalls) != 2 || c.Expect.ToolCalls[0].Result != "" ||
		string(c.Expect.ToolCalls[0].Args) != `{"q":"ask"}` || len(c.Expect.Nodes) != 4 {
		t.Fatalf("expectations %+v", c.Expect)
	}
	// It is a valid dataset line.
	var buf bytes.Buffer
	c.ID = "recorded"
	c.Criteria = []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":"and more"}`)}}
	if err := eval.WriteDataset(&buf, &eval.Dataset{Name: "r", Cases: []eval.Case{c}}); err != nil {
		t.Fatal(err)
	}
	back, err := eval.ReadDataset(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := (&eval.Runner{Target: newTarget(t), Experiment: "replay"}).Run(context.Background(), back)
	if err != nil || !exp.Cases[0].Pass {
		t.Fatalf("the recorded case does not replay: %v %+v", err, exp.Cases[0].Trials)
	}
}
