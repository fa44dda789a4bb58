package eval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// The test evaluators: registered once for the package's tests.
func init() {
	eval.Register("test_contains", func(p json.RawMessage) (eval.Evaluator, error) {
		var cfg struct{ Text string }
		if err := json.Unmarshal(p, &cfg); err != nil {
			return nil, err
		}
		return containsEval{cfg.Text}, nil
	})
	eval.Register("test_meta_score", func(json.RawMessage) (eval.Evaluator, error) { return metaScore{}, nil })
	eval.Register("test_broken", func(json.RawMessage) (eval.Evaluator, error) { return broken{}, nil })
}

// containsEval scores 1 when the final response contains its text.
type containsEval struct{ text string }

func (containsEval) Name() string { return "test_contains" }
func (c containsEval) Evaluate(_ context.Context, t eval.Trial) (eval.Score, error) {
	if strings.Contains(t.Thread.FinalResponse(), c.text) {
		return eval.Score{Value: 1, Explanation: "found " + c.text}, nil
	}
	return eval.Score{Value: 0, Explanation: fmt.Sprintf("%q not in %q", c.text, t.Thread.FinalResponse())}, nil
}

// metaScore scores the case's metadata "score" (a number), or, for
// repetition r, "scores"[r].
type metaScore struct{}

func (metaScore) Name() string { return "test_meta_score" }
func (metaScore) Evaluate(_ context.Context, t eval.Trial) (eval.Score, error) {
	if s, ok := t.Case.Metadata["scores"].([]any); ok {
		return eval.Score{Value: s[t.Repetition%len(s)].(float64)}, nil
	}
	v, _ := t.Case.Metadata["score"].(float64)
	return eval.Score{Value: v}, nil
}

type broken struct{}

func (broken) Name() string { return "test_broken" }
func (broken) Evaluate(context.Context, eval.Trial) (eval.Score, error) {
	return eval.Score{}, errors.New("the judge is down")
}

var messages = llm.NewMessagesKey("messages")

// testGraph is a small chat graph: "agent" reads the last user message;
// "ask" makes it ask a confirm question first, "twice" two questions,
// "fail" fails the node, "slow" waits for the context; then it calls a
// lookup tool (its result an error when the message says "bad") and
// "respond" answers "echo: <message> (<answers>)".
func testGraph(t testing.TB) *graph.Graph {
	b := graph.New(messages)
	b.AddNode("agent", func(ctx context.Context, s graph.State) (graph.Output, error) {
		ms := messages.Get(s)
		text := ms[len(ms)-1].Text()
		var got []string
		if strings.Contains(text, "ask") {
			a, err := graph.Interrupt[string](ctx, map[string]any{"kind": "confirm", "question": "Proceed with " + text + "?"})
			if err != nil {
				return nil, err
			}
			got = append(got, a)
		}
		if strings.Contains(text, "twice") {
			a, err := graph.Interrupt[string](ctx, map[string]any{"kind": "choice", "question": "Which one?"})
			if err != nil {
				return nil, err
			}
			got = append(got, a)
		}
		if strings.Contains(text, "fail") {
			return nil, errors.New("the agent broke")
		}
		if strings.Contains(text, "slow") {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		call := llm.ToolCall{ID: llm.NewCallID(), Name: "lookup", Arguments: `{"q":"` + strings.Fields(text)[0] + `"}`}
		res := llm.ToolResult(call, "found")
		if strings.Contains(text, "bad") {
			res = llm.ToolError(call, "no such thing")
		}
		graph.RecordUsage(ctx, graph.Usage{InputTokens: 10, OutputTokens: 2, Requests: 1})
		return graph.Writes(graph.Append(messages, llm.Assistant("", call), res,
			llm.Assistant("echo: "+text+" ("+strings.Join(got, ",")+")"))), nil
	})
	b.AddNode("respond", func(context.Context, graph.State) (graph.Output, error) { return nil, nil })
	b.SetEntry("agent")
	b.AddEdge("agent", "respond")
	b.AddEdge("respond", graph.END)
	b.SetName("testchat")
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// countingTarget counts the runs started with an input.
type countingTarget struct {
	eval.Target
	starts atomic.Int64
}

func (c *countingTarget) Run(ctx context.Context, req eval.RunRequest) (*eval.RunOutcome, error) {
	if len(req.Resume) == 0 {
		c.starts.Add(1)
	}
	return c.Target.Run(ctx, req)
}

func newTarget(t testing.TB) *eval.GraphTarget {
	return &eval.GraphTarget{Graph: testGraph(t), Saver: checkpoint.NewMemory()}
}

func threshold(v float64) *float64 { return &v }

func raw(s string) json.RawMessage { return json.RawMessage(s) }
