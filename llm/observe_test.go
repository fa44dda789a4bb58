package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// callObserver records the model calls a run reports.
type callObserver struct {
	mu    sync.Mutex
	ops   []graph.Op
	ends  []graph.OpEnd
	inCtx []bool // whether the model saw the context Start returned
}

type obsKey struct{}

func (o *callObserver) Start(ctx context.Context, op graph.Op) (context.Context, func(graph.OpEnd)) {
	if op.Kind != graph.OpModelCall {
		return ctx, func(graph.OpEnd) {}
	}
	o.mu.Lock()
	o.ops = append(o.ops, op)
	o.mu.Unlock()
	return context.WithValue(ctx, obsKey{}, true), func(e graph.OpEnd) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.ends = append(o.ends, e)
	}
}

// seeing is a model that notes whether its context came from the observer.
type seeing struct {
	llm.Model
	o *callObserver
}

func (s seeing) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	s.o.mu.Lock()
	s.o.inCtx = append(s.o.inCtx, ctx.Value(obsKey{}) != nil)
	s.o.mu.Unlock()
	return s.Model.Generate(ctx, req)
}

// Call reports each model call to the run's observer: the model's name and
// node at the start; usage, finish reason and answering model, or the
// error, at the end; and the model runs with the observer's context.
func TestCallReportsToObserver(t *testing.T) {
	boom := errors.New("provider down")
	o := &callObserver{}
	m := seeing{llmtest.New(llmtest.WithName("acme:m1")).Reply(
		llmtest.Text("hi").WithUsage(llm.Usage{InputTokens: 5, OutputTokens: 2}),
		llmtest.Fail(boom),
	), o}
	msgs := llm.NewMessagesKey("messages")
	b := graph.New(msgs)
	b.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Output, error) {
		req := &llm.Request{Messages: []llm.Message{llm.User("hello")}}
		if _, err := llm.Call(ctx, m, req); err != nil {
			return nil, err
		}
		_, err := llm.Call(ctx, m, req)
		if !errors.Is(err, boom) {
			return nil, err
		}
		return nil, nil
	})
	b.SetEntry("ask")
	b.AddEdge("ask", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), nil, graph.WithObserver(o)); err != nil {
		t.Fatal(err)
	}
	if len(o.ops) != 2 || o.ops[0].Model != "acme:m1" || o.ops[0].Node != "ask" || o.ops[0].Step != 1 {
		t.Fatalf("ops %+v", o.ops)
	}
	if e := o.ends[0]; e.Err != nil || e.Usage.InputTokens != 5 || e.Usage.OutputTokens != 2 || e.FinishReason != "stop" || e.ResponseModel != "m1" {
		t.Errorf("first end %+v", e)
	}
	if !errors.Is(o.ends[1].Err, boom) {
		t.Errorf("second end %+v, want the provider's error", o.ends[1])
	}
	if len(o.inCtx) != 2 || !o.inCtx[0] || !o.inCtx[1] {
		t.Errorf("the model saw the observer's context: %v", o.inCtx)
	}
}
