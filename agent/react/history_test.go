package react_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/tool"
)

// longThreadModel answers a long scripted thread and checks every request
// it gets. A user message "turn N" is answered directly, or, for every
// third N, by a tool call first. Summary requests (the summariser's system
// prompt) are answered with a summary listing the turns it covers, built
// from the summary so far and the new messages only.
type longThreadModel struct {
	t *testing.T

	mu        sync.Mutex
	calls     int
	summaries int
	maxSent   int
	// covered is the highest turn the last summary covers (-1: none).
	covered int
}

var turnRE = regexp.MustCompile(`turn (\d+)\b`)

func (m *longThreadModel) Name() string { return "test:long-thread" }

func (m *longThreadModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, errors.New("not streamed in this test")) }
}

func (m *longThreadModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.t
	if req.Messages[0].Text() == history.DefaultSummaryPrompt {
		return m.summarise(req)
	}
	m.calls++
	m.maxSent = max(m.maxSent, len(req.Messages))
	checkRequestPairs(t, req.Messages)
	// The turns sent, and the summary's, must cover 0..latest with no gap.
	var seen []int
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleUser {
			seen = append(seen, turnOf(msg.Text()))
		}
	}
	latest := seen[len(seen)-1]
	if m.covered >= 0 {
		if !strings.Contains(req.Messages[1].Text(), history.DefaultSummaryIntro+summaryText(m.covered)) {
			t.Fatalf("request for turn %d does not carry the summary through turn %d: %.200q", latest, m.covered, req.Messages[1].Text())
		}
	}
	if seen[0] != m.covered+1 || seen[len(seen)-1]-seen[0] != len(seen)-1 {
		t.Fatalf("request for turn %d sends turns %v after a summary through %d; want an unbroken run after it", latest, seen, m.covered)
	}
	last := req.Messages[len(req.Messages)-1]
	var reply llm.Message
	switch {
	case last.Role == llm.RoleUser && latest%3 == 0:
		reply = llm.Assistant("", llm.ToolCall{ID: fmt.Sprintf("call_%d", latest), Name: "note", Arguments: fmt.Sprintf(`{"n":%d}`, latest)})
	default:
		reply = llm.Assistant(fmt.Sprintf("answer to turn %d", latest))
	}
	return &llm.Response{Message: reply, FinishReason: llm.FinishStop}, nil
}

// summarise answers a summary request: "turns 0-K", where K is the last
// turn in the new messages. It checks the new messages start right after
// the previous summary (incremental, nothing resent).
func (m *longThreadModel) summarise(req *llm.Request) (*llm.Response, error) {
	m.summaries++
	body := req.Messages[1].Text()
	prev, rest, _ := strings.Cut(strings.TrimPrefix(body, "Summary so far:\n"), "\n\nMessages that follow it:\n")
	want := "(none yet)"
	if m.covered >= 0 {
		want = summaryText(m.covered)
	}
	if prev != want {
		m.t.Fatalf("summary call %d got summary so far %q; want %q", m.summaries, prev, want)
	}
	var turns []int
	for _, sm := range turnRE.FindAllStringSubmatch(rest, -1) {
		n, _ := strconv.Atoi(sm[1])
		turns = append(turns, n)
	}
	if len(turns) == 0 || turns[0] != m.covered+1 {
		m.t.Fatalf("summary call %d folds in turns %v; want them to start at %d", m.summaries, turns, m.covered+1)
	}
	m.covered = slices.Max(turns)
	return &llm.Response{Message: llm.Assistant(summaryText(m.covered)), FinishReason: llm.FinishStop}, nil
}

func summaryText(through int) string { return fmt.Sprintf("the user asked turns 0-%d", through) }

func turnOf(s string) int {
	sm := turnRE.FindStringSubmatch(s)
	if sm == nil {
		return -1
	}
	n, _ := strconv.Atoi(sm[1])
	return n
}

func checkRequestPairs(t *testing.T, msgs []llm.Message) {
	t.Helper()
	open := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
		if m.Role == llm.RoleTool {
			if !open[m.ToolCallID] {
				t.Fatalf("tool result %s sent without its call", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 {
		t.Fatalf("tool calls %v sent without results", open)
	}
}

func noteTool() tool.Tool {
	return tool.MustFunc("note", "Take a note.", func(_ context.Context, a struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprintf("noted %d", a.N), nil
	}, tool.ReadOnly())
}

// TestLongThreadSummarized runs 500 turns on one thread with a summarising
// history policy: every request stays bounded, keeps tool pairs whole and
// carries the summary of everything it leaves out, the summary is extended
// incrementally, and the thread keeps every message.
func TestLongThreadSummarized(t *testing.T) {
	m := &longThreadModel{t: t, covered: -1}
	g, err := react.New(react.Config{
		Model: m, System: "You are terse.", Tools: []tool.Tool{noteTool()},
		History: history.Summarize{Model: m, KeepTurns: 4, MaxTurns: 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := threadOpts("long")
	const turns = 500
	var res *graph.Result
	for i := range turns {
		if res, err = g.Invoke(ctx, react.Input(fmt.Sprintf("turn %d", i)), opts...); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	msgs := react.Messages.Get(res.State)
	// 500 user messages, 500 answers, and a call and a result for every
	// third turn.
	if want := 2*turns + 2*((turns+2)/3); len(msgs) != want {
		t.Errorf("the thread holds %d messages; want all %d", len(msgs), want)
	}
	sum := react.HistorySummary.Get(res.State)
	if sum.Text != summaryText(m.covered) || m.covered < turns-9 {
		t.Errorf("state summary = %+v; model covered through turn %d", sum, m.covered)
	}
	// 8 turns of at most 4 messages, the system prompt and the summary.
	if m.maxSent > 8*4+2 {
		t.Errorf("a request carried %d messages; want at most %d", m.maxSent, 8*4+2)
	}
	// A summary call is due when a 9th turn follows the summary and folds
	// in all but the last 4: one call per 5 turns, not one per request.
	if m.summaries > turns/5+1 || m.summaries < turns/5-2 {
		t.Errorf("%d summary calls for %d turns; want about %d", m.summaries, turns, turns/5)
	}
	t.Logf("%d model calls, %d summary calls, at most %d messages per request", m.calls, m.summaries, m.maxSent)
}

// TestLongThreadBudget runs 500 turns under a token budget: every request
// fits it and keeps tool pairs whole and the latest question.
func TestLongThreadBudget(t *testing.T) {
	const budget = 300
	var maxTokens, calls int
	check := func(req *llm.Request) {
		calls++
		checkRequestPairs(t, req.Messages)
		n := 0
		for _, msg := range req.Messages {
			n += history.Estimate.Count(msg)
		}
		maxTokens = max(maxTokens, n)
		if n > budget {
			t.Fatalf("request %d has %d estimated tokens; budget %d", calls, n, budget)
		}
	}
	m := &budgetModel{check: check}
	g, err := react.New(react.Config{
		Model: m, System: "You are terse.", Tools: []tool.Tool{noteTool()},
		History: history.Budget{Max: budget},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := threadOpts("budget")
	for i := range 500 {
		res, err := g.Invoke(ctx, react.Input(fmt.Sprintf("turn %d", i)), opts...)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if i == 499 && len(react.Messages.Get(res.State)) < 1000 {
			t.Errorf("the thread lost messages: %d", len(react.Messages.Get(res.State)))
		}
	}
	if maxTokens < budget/2 {
		t.Errorf("the largest request had %d tokens; the budget of %d was hardly used", maxTokens, budget)
	}
	t.Logf("%d calls, largest request %d tokens of %d", calls, maxTokens, budget)
}

type budgetModel struct {
	check func(*llm.Request)
}

func (m *budgetModel) Name() string { return "test:budget" }

func (m *budgetModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, errors.New("not streamed in this test")) }
}

func (m *budgetModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.check(req)
	last := req.Messages[len(req.Messages)-1]
	if n := turnOf(last.Text()); last.Role == llm.RoleUser && n%3 == 0 {
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: "note", Arguments: `{"n":1}`})}, nil
	}
	return &llm.Response{Message: llm.Assistant("answered " + strings.Repeat("words ", 10))}, nil
}

// A misconfigured policy is reported by New with the other problems.
func TestHistoryPolicyCheckedAtNew(t *testing.T) {
	_, err := react.New(react.Config{Model: &budgetModel{}, History: history.Summarize{}})
	if err == nil || !strings.Contains(err.Error(), "Config.History: history: Summarize.Model is nil") {
		t.Errorf("New with a summarizer without a model: %v", err)
	}
}

// A thread saved with a summarising policy still loads, and goes on,
// when the agent is rebuilt without a policy.
func TestThreadOutlivesItsPolicy(t *testing.T) {
	m := &longThreadModel{t: t, covered: -1}
	with, err := react.New(react.Config{Model: m, System: "s", History: history.Summarize{Model: m, KeepTurns: 1, MaxTurns: 1}})
	if err != nil {
		t.Fatal(err)
	}
	opts := threadOpts("switch")
	ctx := context.Background()
	for i := range 3 {
		if _, err := with.Invoke(ctx, react.Input(fmt.Sprintf("turn %d", i)), opts...); err != nil {
			t.Fatal(err)
		}
	}
	without, err := react.New(react.Config{Model: &budgetModel{check: func(*llm.Request) {}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := without.Invoke(ctx, react.Input("turn 4"), opts...)
	if err != nil {
		t.Fatalf("the thread does not load without the policy: %v", err)
	}
	if react.HistorySummary.Get(res.State).Text == "" || len(react.Messages.Get(res.State)) != 10 {
		t.Errorf("summary %+v, %d messages", react.HistorySummary.Get(res.State), len(react.Messages.Get(res.State)))
	}
}
