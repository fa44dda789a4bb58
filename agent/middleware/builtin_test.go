package middleware_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// must returns m, and panics on a constructor error (a broken test).
func must(m middleware.Middleware, err error) middleware.Middleware {
	if err != nil {
		panic(err)
	}
	return m
}

// echo returns a tool handler answering every call with text.
func echo(text string) middleware.ToolHandler {
	return func(_ context.Context, c *middleware.ToolCall) (*middleware.ToolResult, error) {
		return &middleware.ToolResult{Message: llm.ToolResult(c.Call, text)}, nil
	}
}

func TestPIIDetectsAndMasks(t *testing.T) {
	p := must(middleware.PII(middleware.PIIConfig{
		Detectors: []middleware.Detector{middleware.Email(), middleware.Card(), middleware.NationalID(), middleware.Phone(),
			middleware.RegexDetector("ticket", regexp.MustCompile(`TCK-\d+`))},
	}))
	cases := []struct{ in, want string }{
		{"write to ann.lee@example.org now", "write to [REDACTED:email] now"},
		{"card 4111 1111 1111 1111 ok", "card [REDACTED:card] ok"},
		{"card 4111 1111 1111 1112 is not a card", "card 4111 1111 1111 1112 is not a card"},
		{"id 123-45-6789.", "id [REDACTED:national_id]."},
		{"call +44 20 7946 0958 today", "call [REDACTED:phone] today"},
		{"ticket TCK-991 open", "ticket [REDACTED:ticket] open"},
		{"in 2026 we had 3 rooms", "in 2026 we had 3 rooms"},
	}
	for _, c := range cases {
		h := mustChain(t, p).WrapTool(echo(c.in))
		res, err := h(context.Background(), &middleware.ToolCall{Call: llm.ToolCall{ID: "c1", Name: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Message.Text(); got != c.want {
			t.Errorf("%q → %q; want %q", c.in, got, c.want)
		}
	}
}

func TestPIIHashIsStableAndBlockRefuses(t *testing.T) {
	hash := must(middleware.PII(middleware.PIIConfig{Strategy: middleware.Hash, ToolResults: true}))
	run := func(m middleware.Middleware, text string) *middleware.ToolResult {
		res, err := mustChain(t, m).WrapTool(echo(text))(context.Background(), &middleware.ToolCall{Call: llm.ToolCall{ID: "c1", Name: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(hash, "a@b.io"), run(hash, "x a@b.io y")
	if !strings.HasPrefix(a.Message.Text(), "[email:") || !strings.Contains(b.Message.Text(), a.Message.Text()) || strings.Contains(a.Message.Text(), "a@b.io") {
		t.Errorf("hash: %q and %q", a.Message.Text(), b.Message.Text())
	}
	block := must(middleware.PII(middleware.PIIConfig{Strategy: middleware.Block}))
	r := run(block, "mail a@b.io")
	if !r.Message.IsError || strings.Contains(r.Message.Text(), "a@b.io") || !strings.Contains(r.Message.Text(), "email") {
		t.Errorf("block on a tool result: %+v", r.Message)
	}
	turn := &middleware.Turn{Messages: []llm.Message{llm.User("I am a@b.io")}}
	var be *middleware.BlockedError
	if err := mustChain(t, block).BeforeTurn(context.Background(), turn); !errors.As(err, &be) || be.Where != "input" {
		t.Errorf("block on input: %v", err)
	}
	if _, err := middleware.PII(middleware.PIIConfig{Strategy: "erase"}); err == nil {
		t.Error("unknown strategy accepted")
	}
}

func TestPIIRedactsInputAndOutput(t *testing.T) {
	p := must(middleware.PII(middleware.PIIConfig{}))
	c := mustChain(t, p)
	u := llm.User("reach me at bo@x.org")
	turn := &middleware.Turn{Messages: []llm.Message{llm.Assistant("hi"), u}}
	if err := c.BeforeTurn(context.Background(), turn); err != nil {
		t.Fatal(err)
	}
	r := turn.Replaced()
	if len(r) != 1 || r[0].ID != u.ID || r[0].Text() != "reach me at [REDACTED:email]" || turn.Messages[1].Text() != r[0].Text() {
		t.Fatalf("input: %+v", r)
	}
	m := llmtest.New().Reply(llmtest.Text("his card is 4242424242424242"))
	resp, err := c.WrapModel(nil)(context.Background(), &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.User("x")}}, Model: m})
	if err != nil || resp.Message.Text() != "his card is [REDACTED:card]" {
		t.Fatalf("output: %v %v", resp, err)
	}
}

func TestClearToolResultsKeepsPairsAndNewest(t *testing.T) {
	mw := must(middleware.ClearToolResults(middleware.ClearToolResultsConfig{TriggerTokens: 100, Keep: 1}))
	big := strings.Repeat("x", 400) // 100 tokens
	var msgs []llm.Message
	msgs = append(msgs, llm.User("go"))
	for _, id := range []string{"1", "2", "3"} {
		c := llm.ToolCall{ID: id, Name: "search", Arguments: "{}"}
		msgs = append(msgs, llm.Assistant("", c), llm.ToolResult(c, big))
	}
	var got []llm.Message
	inner := func(_ context.Context, c *middleware.ModelCall) (*llm.Response, error) {
		got = c.Request.Messages
		return &llm.Response{}, nil
	}
	req := &llm.Request{Messages: msgs}
	if _, err := mustChain(t, mw).WrapModel(inner)(context.Background(), &middleware.ModelCall{Request: req}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("messages %d → %d", len(msgs), len(got))
	}
	if got[2].Text() != middleware.DefaultClearedText || got[4].Text() != middleware.DefaultClearedText || got[6].Text() != big {
		t.Errorf("cleared: %q / %q / newest %d runes", got[2].Text()[:10], got[4].Text()[:10], len(got[6].Text()))
	}
	if got[2].ToolCallID != "1" || msgs[2].Text() != big {
		t.Error("pairing lost, or the caller's request changed")
	}
	if err := llm.CheckHistory(got); err != nil {
		t.Errorf("edited history invalid: %v", err)
	}
	// Under the threshold nothing changes.
	small := &llm.Request{Messages: msgs[:3]}
	if _, err := mustChain(t, mw).WrapModel(inner)(context.Background(), &middleware.ModelCall{Request: small}); err != nil || got[2].Text() != big {
		t.Errorf("small request edited: %v", err)
	}
}

func TestDynamicPromptReadsState(t *testing.T) {
	lang := graph.NewKey[string]("lang")
	mw := must(middleware.DynamicPrompt("", func(_ context.Context, s graph.State) (string, error) {
		return "Answer in " + lang.Get(s) + ".", nil
	}))
	var got *llm.Request
	b := graph.New(lang)
	b.AddNode("n", func(ctx context.Context, s graph.State) (graph.Output, error) {
		h := mustChain(t, mw).WrapModel(func(_ context.Context, c *middleware.ModelCall) (*llm.Response, error) {
			got = c.Request
			return &llm.Response{}, nil
		})
		_, err := h(ctx, &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.System("old"), llm.User("hi")}}, State: s})
		return nil, err
	})
	b.SetEntry("n")
	b.AddEdge("n", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), graph.Writes(lang.Set("Norwegian"))); err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 2 || got.Messages[0].Text() != "Answer in Norwegian." {
		t.Errorf("request: %+v", got.Messages)
	}
}

func TestToolSelectorNarrowsTools(t *testing.T) {
	cheap := llmtest.New(llmtest.WithName("test:cheap")).Reply(llmtest.Text(`{"tools":["weather","made_up","search"]}`))
	mw := must(middleware.ToolSelector(middleware.ToolSelectorConfig{Model: cheap, MaxTools: 1, AlwaysInclude: []string{"stop"}}))
	var tools []string
	inner := func(_ context.Context, c *middleware.ModelCall) (*llm.Response, error) {
		for _, s := range c.Request.Tools {
			tools = append(tools, s.Name)
		}
		return &llm.Response{}, nil
	}
	req := &llm.Request{Messages: []llm.Message{llm.User("weather in Oslo?")}, Tools: []llm.ToolSpec{{Name: "search"}, {Name: "weather"}, {Name: "email"}, {Name: "stop"}}}
	if _, err := mustChain(t, mw).WrapModel(inner)(context.Background(), &middleware.ModelCall{Request: req}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tools, []string{"weather", "stop"}) || len(req.Tools) != 4 {
		t.Errorf("tools offered %v", tools)
	}
	last := cheap.LastRequest()
	if !strings.Contains(last.Messages[0].Text(), "- email:") || last.LastUser() != "weather in Oslo?" {
		t.Errorf("selector request: %+v", cheap.LastRequest().Messages)
	}
}

func TestConstructorsRejectBadConfig(t *testing.T) {
	for name, err := range map[string]error{
		"limit none":    second(middleware.ToolLimit(middleware.ToolLimitConfig{})),
		"limit neg":     second(middleware.ToolLimit(middleware.ToolLimitConfig{RunLimit: -1})),
		"clear":         second(middleware.ClearToolResults(middleware.ClearToolResultsConfig{})),
		"selector":      second(middleware.ToolSelector(middleware.ToolSelectorConfig{})),
		"offload":       second(middleware.Offload(middleware.OffloadConfig{MinRunes: 10, Preview: 20})),
		"prompt":        second(middleware.DynamicPrompt("p", nil)),
		"history":       second(middleware.History(nil, nil)),
		"pii detectors": second(middleware.PII(middleware.PIIConfig{Detectors: []middleware.Detector{{}}})),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestRetryAndFallbackWrapTheCallsModel(t *testing.T) {
	flaky := llmtest.New(llmtest.WithName("test:flaky")).Reply(llmtest.StatusError(503, "busy"), llmtest.Text("second try"))
	retry := middleware.Retry(llm.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond})
	call := &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.User("x")}}, Model: flaky}
	resp, err := mustChain(t, retry).WrapModel(nil)(context.Background(), call)
	if err != nil || resp.Message.Text() != "second try" {
		t.Fatalf("retry: %v %v", resp, err)
	}
	down := llmtest.New(llmtest.WithName("test:down")).Reply(llmtest.StatusError(500, "down"))
	backup := llmtest.New(llmtest.WithName("test:backup")).Reply(llmtest.Text("from backup"))
	fb := must(middleware.Fallback(nil, backup))
	call = &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.User("x")}}, Model: down}
	resp, err = mustChain(t, fb).WrapModel(nil)(context.Background(), call)
	if err != nil || resp.Message.Text() != "from backup" {
		t.Fatalf("fallback: %v %v", resp, err)
	}
	if _, err := middleware.Fallback(nil); err == nil {
		t.Error("a fallback without models was accepted")
	}
}
