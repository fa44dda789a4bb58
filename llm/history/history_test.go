package history_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// turn returns a user message and, with calls > 0, an assistant message
// with that many tool calls, their results, and a final answer.
func turn(i, calls int) []llm.Message {
	msgs := []llm.Message{llm.User(fmt.Sprintf("question %d", i))}
	if calls > 0 {
		var cs []llm.ToolCall
		for j := range calls {
			cs = append(cs, llm.ToolCall{ID: fmt.Sprintf("c%d_%d", i, j), Name: "lookup", Arguments: `{}`})
		}
		msgs = append(msgs, llm.Assistant("", cs...))
		for _, c := range cs {
			msgs = append(msgs, llm.ToolResult(c, "result "+c.ID))
		}
	}
	return append(msgs, llm.Assistant(fmt.Sprintf("answer %d", i)))
}

func thread(turns ...[]llm.Message) []llm.Message {
	var out []llm.Message
	for _, t := range turns {
		out = append(out, t...)
	}
	return out
}

func texts(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role) + ":" + m.Text()
		if len(m.ToolCalls) > 0 {
			s += fmt.Sprintf("+%dcalls", len(m.ToolCalls))
		}
		out = append(out, s)
	}
	return out
}

// checkPairs fails when a tool call and its result are not both present,
// the result after the call.
func checkPairs(t *testing.T, msgs []llm.Message) {
	t.Helper()
	open := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
		if m.Role == llm.RoleTool {
			if !open[m.ToolCallID] {
				t.Errorf("tool result %s is sent without its call: %v", m.ToolCallID, texts(msgs))
			}
			delete(open, m.ToolCallID)
		}
	}
	for id := range open {
		t.Errorf("tool call %s is sent without its result: %v", id, texts(msgs))
	}
}

func selectMsgs(t *testing.T, p history.Policy, h history.History) history.Selection {
	t.Helper()
	sel, err := p.Select(context.Background(), h)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	checkPairs(t, sel.Messages)
	return sel
}

func TestLastTurns(t *testing.T) {
	msgs := thread([]llm.Message{llm.System("pinned")}, turn(0, 1), turn(1, 0), turn(2, 2), turn(3, 0))
	sel := selectMsgs(t, history.LastTurns{N: 2}, history.History{Messages: msgs})
	want := append([]string{"system:pinned"}, texts(thread(turn(2, 2), turn(3, 0)))...)
	if got := texts(sel.Messages); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("LastTurns{2} = %v; want %v", got, want)
	}
	if sel := selectMsgs(t, history.LastTurns{N: 9}, history.History{Messages: msgs}); len(sel.Messages) != len(msgs) {
		t.Errorf("LastTurns{9} over 4 turns sent %d of %d messages", len(sel.Messages), len(msgs))
	}
	// A history without a user message is one turn.
	only := []llm.Message{llm.Assistant("hello")}
	if sel := selectMsgs(t, history.LastTurns{N: 1}, history.History{Messages: only}); len(sel.Messages) != 1 {
		t.Errorf("LastTurns{1} of an assistant-only history = %v", texts(sel.Messages))
	}
	if _, err := (history.LastTurns{}).Select(context.Background(), history.History{Messages: msgs}); err == nil {
		t.Error("LastTurns{0} succeeded; want an error")
	}
}

// one counts every message as one token, for exact budgets.
var one = history.CounterFunc(func(llm.Message) int { return 1 })

func TestBudgetKeepsPairsAtTheBoundary(t *testing.T) {
	// The latest turn: user, assistant with 2 calls, 2 results, answer
	// (6 messages). Older: turn 0 (2 messages).
	msgs := thread(turn(0, 0), turn(1, 2))
	for budget, want := range map[int][]string{
		// system prompt 1 + user 1 + answer 1 = 3; the call group (3)
		// does not fit in 4 or 5, so it goes whole.
		4: {"user:question 1", "assistant:answer 1"},
		5: {"user:question 1", "assistant:answer 1"},
		// 6 fits the group; turn 0 (2) needs 8.
		6: texts(turn(1, 2)),
		7: texts(turn(1, 2)),
		8: texts(thread(turn(0, 0), turn(1, 2))),
	} {
		sel := selectMsgs(t, history.Budget{Max: budget, Counter: one}, history.History{System: []llm.Message{llm.System("s")}, Messages: msgs})
		if got := texts(sel.Messages); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("budget %d: sent %v; want %v", budget, got, want)
		}
	}
}

func TestBudgetSmallerThanTheLatestTurn(t *testing.T) {
	msgs := thread([]llm.Message{llm.System("pinned")}, turn(0, 0), turn(1, 1))
	// Budget 1 cannot even hold the system messages and the question:
	// they are sent anyway, and nothing else.
	sel := selectMsgs(t, history.Budget{Max: 1, Counter: one}, history.History{System: []llm.Message{llm.System("s")}, Messages: msgs})
	want := []string{"system:pinned", "user:question 1"}
	if got := texts(sel.Messages); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("budget 1: sent %v; want %v", got, want)
	}
	if _, err := (history.Budget{}).Select(context.Background(), history.History{Messages: msgs}); err == nil {
		t.Error("Budget{Max: 0} succeeded; want an error")
	}
}

func TestBudgetKeepsAnUnbrokenSuffix(t *testing.T) {
	// An older turn that does not fit stops the walk: a smaller, even
	// older one is not sent after a gap.
	big := []llm.Message{llm.User(strings.Repeat("long ", 400)), llm.Assistant("ok")}
	msgs := thread(turn(0, 0), big, turn(2, 0))
	sel := selectMsgs(t, history.Budget{Max: 60}, history.History{Messages: msgs})
	want := texts(turn(2, 0))
	if got := texts(sel.Messages); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sent %v; want only the latest turn %v", got, want)
	}
}

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		m    llm.Message
		want int
	}{
		{llm.User(""), 4},
		{llm.User("abcd"), 5},
		{llm.User("abcde"), 6},
		{llm.User("日本語です"), 6}, // runes, not bytes
		{llm.Assistant("", llm.ToolCall{ID: "c", Name: "ab", Arguments: `{}`}), 5},
		{llm.UserParts(llm.ImageURL("https://x/y.png")), 89},
	} {
		if got := history.Estimate.Count(tc.m); got != tc.want {
			t.Errorf("Estimate(%v) = %d; want %d", texts([]llm.Message{tc.m}), got, tc.want)
		}
	}
}

func TestSummarizeIsIncremental(t *testing.T) {
	m := llmtest.New()
	m.Reply(llmtest.Text("S1"), llmtest.Text("S2"))
	p := history.Summarize{Model: m, KeepTurns: 2, MaxTurns: 3}
	var msgs []llm.Message
	for i := range 4 {
		msgs = append(msgs, turn(i, i%2)...)
	}
	// 4 turns > 3: turns 0 and 1 are summarised, 2 and 3 sent.
	sel := selectMsgs(t, p, history.History{Messages: msgs})
	if sel.Summary.Text != "S1" || sel.Summary.Messages != len(turn(0, 0))+len(turn(1, 1)) {
		t.Fatalf("first summary = %+v", sel.Summary)
	}
	want := append([]string{"system:" + history.DefaultSummaryIntro + "S1"}, texts(thread(turn(2, 0), turn(3, 1)))...)
	if got := texts(sel.Messages); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sent %v; want %v", got, want)
	}
	first := m.LastRequest().Messages[1].Text()
	if !strings.Contains(first, "question 0") || !strings.Contains(first, "question 1") || strings.Contains(first, "question 2") {
		t.Errorf("the first summary call saw %q; want turns 0 and 1 only", first)
	}
	// One more turn: 3 after the summary, not more than MaxTurns: no call.
	msgs = append(msgs, turn(4, 0)...)
	sel = selectMsgs(t, p, history.History{Messages: msgs, Summary: sel.Summary})
	if n := len(m.Requests()); n != 1 {
		t.Errorf("%d summary calls after a turn within MaxTurns; want 1", n)
	}
	// Another: turns 2 and 3 are folded into S1, and only they are shown.
	msgs = append(msgs, turn(5, 1)...)
	sel = selectMsgs(t, p, history.History{Messages: msgs, Summary: sel.Summary})
	second := m.LastRequest().Messages[1].Text()
	if !strings.Contains(second, "Summary so far:\nS1") || strings.Contains(second, "question 1") || !strings.Contains(second, "question 3") || strings.Contains(second, "question 4") {
		t.Errorf("the second summary call saw %q; want S1 and turns 2 and 3 only", second)
	}
	if sel.Summary.Text != "S2" || sel.Summary.Through != turn3Last(msgs) {
		t.Errorf("second summary = %+v", sel.Summary)
	}
}

// turn3Last returns the ID of the last message of turn 3 in msgs.
func turn3Last(msgs []llm.Message) string {
	for i, m := range msgs {
		if m.Role == llm.RoleUser && m.Text() == "question 4" {
			return msgs[i-1].ID
		}
	}
	return ""
}

func TestSummarizeRebuildsAfterARewind(t *testing.T) {
	m := llmtest.New()
	m.Reply(llmtest.Text("fresh"))
	p := history.Summarize{Model: m, KeepTurns: 1, MaxTurns: 1}
	msgs := thread(turn(0, 0), turn(1, 0))
	sel := selectMsgs(t, p, history.History{Messages: msgs, Summary: history.Summary{Text: "stale", Through: "gone", Messages: 40}})
	if sel.Summary.Text != "fresh" || sel.Summary.Messages != 2 {
		t.Errorf("summary = %+v; want a fresh one over turn 0", sel.Summary)
	}
	if strings.Contains(m.LastRequest().Messages[1].Text(), "stale") {
		t.Error("the rebuilt summary was given the stale one")
	}
}

func TestSummarizeFailure(t *testing.T) {
	boom := errors.New("boom")
	m := llmtest.New()
	m.Reply(llmtest.Fail(boom))
	p := history.Summarize{Model: m, KeepTurns: 1, MaxTurns: 1}
	_, err := p.Select(context.Background(), history.History{Messages: thread(turn(0, 0), turn(1, 0))})
	if !errors.Is(err, boom) {
		t.Errorf("Select with a failing model = %v; want an error wrapping it", err)
	}
	for _, bad := range []history.Summarize{{}, {Model: m, KeepTurns: 3, MaxTurns: 2}} {
		if _, err := bad.Select(context.Background(), history.History{}); err == nil {
			t.Errorf("Select with %+v succeeded; want an error", bad)
		}
	}
}
