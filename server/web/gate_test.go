package web_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// The gated model's reply, streamed in two halves with the gate between.
const (
	firstHalf  = "The first half streams, "
	secondHalf = "then the gate opens for the second."
)

// gatedModel streams firstHalf, waits until gate is closed (or its
// context ends), then streams secondHalf: a run held mid-stream, so the
// test needs no timing.
type gatedModel struct{ gate <-chan struct{} }

func (gatedModel) Name() string { return "test:gated" }

func (m gatedModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	<-m.gate
	return &llm.Response{Message: llm.Assistant(firstHalf + secondHalf)}, nil
}

func (m gatedModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for _, w := range strings.SplitAfter(firstHalf, " ") {
			if w != "" && !yield(llm.Chunk{Text: w}, nil) {
				return
			}
		}
		select {
		case <-m.gate:
		case <-ctx.Done():
			yield(llm.Chunk{}, ctx.Err())
			return
		}
		if !yield(llm.Chunk{Text: secondHalf}, nil) {
			return
		}
		yield(llm.Chunk{FinishReason: llm.FinishStop}, nil)
	}
}

// gatedGraph answers with the gated model.
func gatedGraph(gate <-chan struct{}) runs.GraphSpec {
	return runs.GraphSpec{Description: "streams half a reply, then waits for the test's gate", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("reply", func(ctx context.Context, s graph.State) (graph.Output, error) {
			resp, err := llm.Call(ctx, gatedModel{gate: gate}, &llm.Request{Messages: react.Messages.Get(s)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(react.Messages, resp.Message)), nil
		})
		b.SetEntry("reply")
		b.AddEdge("reply", graph.END)
		return b.Compile()
	}}
}

// A reload while a run is held mid-stream rejoins it: the half streamed
// so far shows once, and once the gate opens the reply ends whole, once,
// with no doubled or missing text.
func TestBrowserReloadRejoinsRun(t *testing.T) {
	b := newBrowser(t)
	gate := make(chan struct{})
	released := false
	t.Cleanup(func() {
		if !released {
			close(gate)
		}
	})
	url := serve(t, func(s register) error { return s.Register("gated", gatedGraph(gate)) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("gated")
	b.send("stream something")
	b.waitFor("the first half", `document.getElementById('live').innerText.includes('The first half streams,')`)
	b.waitFor("the running thread", `document.getElementById('thread-status').textContent === 'running'`)

	b.do("reloading mid-stream", chromedp.Reload())
	b.waitFor("the rejoined stream", `document.body.classList.contains('running') && document.getElementById('live').innerText.includes('The first half streams,')`)
	if got := eval[string](b, `document.getElementById('live').innerText`); strings.Count(got, "The first half") != 1 {
		t.Errorf("after the reload the stream shows %q", got)
	}
	if hidden := eval[bool](b, `document.getElementById('cancel').hidden`); hidden {
		t.Error("no cancel button while the run streams")
	}
	b.screenshot("rejoined")

	close(gate)
	released = true
	b.waitFor("the whole reply", `document.getElementById('messages').innerText.includes('then the gate opens')`)
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	if got := eval[string](b, `document.getElementById('messages').innerText + '|' + document.getElementById('live').innerText`); strings.Count(got, firstHalf+secondHalf) != 1 || strings.Count(got, "The first half") != 1 {
		t.Errorf("after the run the page shows %q", got)
	}
}
