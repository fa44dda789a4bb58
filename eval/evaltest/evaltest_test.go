package evaltest_test

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/eval/evaltest"
	"github.com/trellis-agents/trellis/llm"
)

func TestThreadBuilder(t *testing.T) {
	b := evaltest.NewThread().
		User("one").Call("a", `{"x":1}`, "ok-a").Assistant("r1").
		User("two").Rejected("b", `{}`, "no").Failed("c", "", "boom").Assistant("r2")
	th := b.Build()
	if len(th.Turns) != 2 || th.Turns[0].Response != "r1" || len(th.Turns[1].ToolCalls) != 2 || th.Turns[1].ToolCalls[0].Status != "rejected" {
		t.Fatalf("turns %+v", th.Turns)
	}
	if len(th.ToolCalls) != 3 || th.ToolCalls[2].Status != "error" || th.ToolCalls[2].Args != nil || th.FinalResponse() != "r2" {
		t.Fatalf("thread %+v", th)
	}
	// Build copies: building on does not change the first thread.
	b.User("three")
	if len(th.Turns) != 2 || len(th.Messages) != 7 {
		t.Fatalf("Build must copy: %d turns, %d messages", len(th.Turns), len(th.Messages))
	}
}

func TestJudgeReplies(t *testing.T) {
	j := evaltest.Judge(evaltest.Verdict(3, "fine"))
	resp, err := llm.Call(context.Background(), j, &llm.Request{Messages: []llm.Message{llm.User("judge")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.Text(); got != `{"reasoning":"fine","score":3}` {
		t.Fatalf("verdict %s", got)
	}
	m, err := evaltest.Resolver(j)(context.Background(), "any")
	if err != nil || m != j {
		t.Fatal("the resolver must answer every name with the judge")
	}
}
