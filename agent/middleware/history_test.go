package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// policyFunc is a history policy made of a function.
type policyFunc func(context.Context, history.History) (history.Selection, error)

func (f policyFunc) Select(ctx context.Context, h history.History) (history.Selection, error) {
	return f(ctx, h)
}

var testSummary = graph.NewKey[history.Summary]("test_history_summary")

// A policy that fails (its summariser is down) does not fail the call:
// the model gets the whole history, the summary is not touched and a
// warning says why. A call whose context has ended fails instead.
func TestHistoryPolicyFailureSendsTheWholeHistory(t *testing.T) {
	var logs bytes.Buffer
	failing := policyFunc(func(context.Context, history.History) (history.Selection, error) {
		return history.Selection{}, errors.New("the summariser is unreachable")
	})
	h, err := middleware.History(failing, testSummary, middleware.HistoryLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	m := llmtest.New()
	m.When(nil, llmtest.Text("answered")).Repeat()
	msgs := []llm.Message{llm.System("be brief"), llm.User("one"), llm.Assistant("two"), llm.User("three")}
	call := &middleware.ModelCall{Request: &llm.Request{Messages: msgs}, Model: m, Tail: []llm.Message{llm.User("tail")}}
	resp, err := mustChain(t, h).WrapModel(nil)(t.Context(), call)
	if err != nil {
		t.Fatalf("the call failed with the policy: %v", err)
	}
	if resp.Message.Text() != "answered" {
		t.Errorf("reply %q", resp.Message.Text())
	}
	reqs := m.Requests()
	if len(reqs) != 1 || len(reqs[0].Messages) != len(msgs)+1 {
		t.Fatalf("the model got %d requests; want one with the whole history and the tail (%d messages)", len(reqs), len(msgs)+1)
	}
	if len(call.Writes()) != 0 {
		t.Errorf("the call wrote %d state writes; want the summary left as it was", len(call.Writes()))
	}
	if !strings.Contains(logs.String(), "the summariser is unreachable") {
		t.Errorf("no warning names the policy's error: %q", logs.String())
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := mustChain(t, h).WrapModel(nil)(ctx, &middleware.ModelCall{Request: &llm.Request{Messages: msgs}, Model: m}); !errors.Is(err, context.Canceled) {
		t.Errorf("with the context cancelled: %v; want context.Canceled", err)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("the model got %d requests; the cancelled call must not reach it", n)
	}
}

// A summary an earlier call of the same step wrote (ModelCall.Pending)
// is the one the policy extends, not the older one in State; the tail is
// not history.
func TestHistoryReadsPendingSummary(t *testing.T) {
	var got history.History
	spy := policyFunc(func(_ context.Context, h history.History) (history.Selection, error) {
		got = h
		return history.Selection{Messages: h.Messages, Summary: history.Summary{Text: h.Summary.Text + "+", Through: "x"}}, nil
	})
	h, err := middleware.History(spy, testSummary)
	if err != nil {
		t.Fatal(err)
	}
	m := llmtest.New()
	m.When(nil, llmtest.Text("ok")).Repeat()
	call := &middleware.ModelCall{
		Request: &llm.Request{Messages: []llm.Message{llm.System("s"), llm.User("q")}},
		Model:   m,
		Tail:    []llm.Message{llm.User("report")},
		Pending: graph.Writes(testSummary.Set(history.Summary{Text: "earlier", Through: "y"})),
	}
	if _, err := mustChain(t, h).WrapModel(nil)(t.Context(), call); err != nil {
		t.Fatal(err)
	}
	if got.Summary.Text != "earlier" {
		t.Errorf("the policy was given the summary %q; want the pending one", got.Summary.Text)
	}
	if len(got.Messages) != 1 || got.Messages[0].Text() != "q" {
		t.Errorf("the policy chose from %v; want the history without system prompt or tail", got.Messages)
	}
	if v, ok := testSummary.In(call.Writes()); !ok || v.Text != "earlier+" {
		t.Errorf("written summary %q (%v); want the extended one", v.Text, ok)
	}
}
