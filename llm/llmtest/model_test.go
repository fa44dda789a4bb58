package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ask(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.User(text)}}
}

func generate(t *testing.T, m llm.Model, req *llm.Request) *llm.Response {
	t.Helper()
	resp, err := m.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestQueueInOrder(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("one"), llmtest.Text("two"))
	if m.Name() != "llmtest:scripted" || m.Pending() != 2 {
		t.Errorf("fresh model: name %q, %d pending", m.Name(), m.Pending())
	}
	var got []string
	for range 2 {
		got = append(got, generate(t, m, ask("next?")).Message.Text())
	}
	if d := cmp.Diff([]string{"one", "two"}, got); d != "" {
		t.Errorf("replies (-want +got):\n%s", d)
	}
	if m.Pending() != 0 {
		t.Errorf("%d replies pending after using them all", m.Pending())
	}
	if _, err := m.Generate(t.Context(), ask("more?")); !errors.Is(err, llmtest.ErrNoReply) {
		t.Errorf("third request: error %v, want ErrNoReply", err)
	}
}

func TestRulesRoute(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.LastUserContains("weather"), llmtest.Text("sunny"))
	m.When(llmtest.HasTool("calc"), llmtest.ToolCalls(llmtest.Call("calc", `{"x":1}`)))
	m.When(llmtest.LastUserContains("weather"), llmtest.Text("rainy"))
	m.When(llmtest.And(llmtest.Not(llmtest.HasTool("calc")), llmtest.LastUserContains("both")), llmtest.Text("and"))
	m.When(llmtest.Or(llmtest.LastUserContains("x"), llmtest.LastUserContains("y")), llmtest.Text("or"))
	m.Reply(llmtest.Text("queued"))

	withCalc := ask("add these")
	withCalc.Tools = []llm.ToolSpec{{Name: "calc"}}
	resp := generate(t, m, withCalc)
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Name != "calc" || resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("HasTool rule: got %+v", resp)
	}
	var got []string
	for _, q := range []string{"weather today?", "weather tomorrow?", "both please", "y", "anything"} {
		got = append(got, generate(t, m, ask(q)).Message.Text())
	}
	// The first weather rule is used up, so the second answers next.
	if d := cmp.Diff([]string{"sunny", "rainy", "and", "or", "queued"}, got); d != "" {
		t.Errorf("replies (-want +got):\n%s", d)
	}
}

func TestToolResultAndStreamedMatchers(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.LastIsToolResult(), llmtest.Text("read the result"))
	m.When(llmtest.Streamed(), llmtest.Text("streamed"))
	m.Reply(llmtest.Text("generated"), llmtest.Text("generated again"))
	call := llm.ToolCall{ID: "c1", Name: "lookup", Arguments: "{}"}
	afterTool := &llm.Request{Messages: []llm.Message{llm.User("q"), llm.Assistant("", call), llm.ToolResult(call, "42")}}
	if got := generate(t, m, afterTool).Message.Text(); got != "read the result" {
		t.Errorf("after a tool result: %q", got)
	}
	if got := generate(t, m, ask("q")).Message.Text(); got != "generated" {
		t.Errorf("Generate: %q", got)
	}
	resp, err := llm.Assemble(m.Stream(t.Context(), ask("q")))
	if err != nil || resp.Message.Text() != "streamed" {
		t.Errorf("Stream: %v, %v", resp, err)
	}
}

func TestRepeatAndOtherwise(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.HasTool("search"), llmtest.Text("first"), llmtest.ToolCalls(llmtest.Call("search", `{}`))).Repeat()
	m.Otherwise(llmtest.Text("fallback"))
	req := ask("find it")
	req.Tools = []llm.ToolSpec{{Name: "search"}}
	if generate(t, m, req).Message.Text() != "first" {
		t.Error("repeating rule did not start with its first reply")
	}
	if m.Pending() != 1 {
		t.Errorf("Pending() = %d, want 1 (the repeated reply, not yet used)", m.Pending())
	}
	var ids []string
	for range 3 {
		ids = append(ids, generate(t, m, req).Message.ToolCalls[0].ID)
	}
	if d := cmp.Diff([]string{"call_1", "call_1_2", "call_1_3"}, ids); d != "" {
		t.Errorf("IDs of a repeated call (-want +got):\n%s", d)
	}
	if m.Pending() != 0 {
		t.Errorf("Pending() = %d after using the repeated reply", m.Pending())
	}
	for range 2 {
		if got := generate(t, m, ask("other")).Message.Text(); got != "fallback" {
			t.Errorf("Otherwise: got %q", got)
		}
	}
}

func TestCallIDsFollowTheScript(t *testing.T) {
	m := llmtest.New()
	m.Reply(llmtest.ToolCalls(llmtest.Call("a", `{}`), llmtest.Call("b", `{}`)))
	m.When(llmtest.Node("never"), llmtest.ToolCalls(llmtest.Call("c", `{}`)))
	m.Reply(llmtest.Text("see").WithCalls(llmtest.Call("d", `{}`), llm.ToolCall{ID: "mine", Name: "e", Arguments: `{}`}))
	var ids []string
	for range 2 {
		for _, c := range generate(t, m, ask("go")).Message.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	if d := cmp.Diff([]string{"call_1", "call_2", "call_4", "mine"}, ids); d != "" {
		t.Errorf("call IDs (-want +got):\n%s", d)
	}
}

func TestUsage(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.Reasoning("abcde", "hi"),
		llmtest.Text("x").WithUsage(llm.Usage{InputTokens: 100, OutputTokens: 5, Requests: 1}),
	)
	req := &llm.Request{Messages: []llm.Message{llm.System("xyz"), llm.User("abcdefgh")}}
	resp := generate(t, m, req)
	// 11 runes in, 7 out (5 of them reasoning): divided by 4, rounded up.
	if want := (llm.Usage{InputTokens: 3, OutputTokens: 2, ReasoningTokens: 2}); resp.Usage != want {
		t.Errorf("estimated usage %+v, want %+v", resp.Usage, want)
	}
	if resp.Message.Reasoning != "abcde" || resp.Model != "scripted" || resp.Message.Role != llm.RoleAssistant || resp.Message.ID == "" {
		t.Errorf("reply %+v", resp)
	}
	if want := (llm.Usage{InputTokens: 100, OutputTokens: 5, Requests: 1}); generate(t, m, req).Usage != want {
		t.Errorf("explicit usage not reported as given")
	}
}

func TestErrorReplies(t *testing.T) {
	sentinel := errors.New("scripted outage")
	m := llmtest.New(llmtest.WithName("acme:large")).Reply(
		llmtest.StatusError(503, "busy"),
		llmtest.Fail(sentinel),
		llmtest.JSON(map[string]int{"n": 1}),
		llmtest.JSON(func() {}),
		llmtest.Text(`{"n": `).WithFinish(llm.FinishLength),
	)
	_, err := m.Generate(t.Context(), ask("q"))
	ae, ok := errors.AsType[*llm.APIError](err)
	if !ok || ae.StatusCode != 503 || ae.Provider != "acme" || ae.Model != "large" || ae.Message != "busy" || !llm.IsRetryable(err) {
		t.Errorf("StatusError: %#v", err)
	}
	if _, err := m.Generate(t.Context(), ask("q")); err != sentinel {
		t.Errorf("Fail: error %v, want the scripted one", err)
	}
	if got := generate(t, m, ask("q")).Message.Text(); got != `{"n":1}` {
		t.Errorf("JSON: text %q", got)
	}
	if _, err := m.Generate(t.Context(), ask("q")); err == nil || !strings.Contains(err.Error(), "cannot encode func()") {
		t.Errorf("JSON of a func: error %v", err)
	}
	resp := generate(t, m, ask("q"))
	if resp.Message.Text() != `{"n": ` || resp.FinishReason != llm.FinishLength {
		t.Errorf("raw truncated text: %q, %s", resp.Message.Text(), resp.FinishReason)
	}
}

func TestWorksWithRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New().Reply(llmtest.StatusError(429, "slow down"), llmtest.Text("ok"))
		resp, err := llm.Retry(m, llm.RetryPolicy{}).Generate(t.Context(), ask("q"))
		if err != nil || resp.Message.Text() != "ok" || resp.Usage.Requests != 2 {
			t.Errorf("Retry over a scripted 429: %v, %+v", err, resp)
		}
	})
}

func TestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New().Reply(llmtest.Text("late").After(3*time.Second), llmtest.Text("never").After(time.Hour))
		start := time.Now()
		if generate(t, m, ask("q")).Message.Text() != "late" || time.Since(start) != 3*time.Second {
			t.Errorf("After(3s): replied after %v", time.Since(start))
		}

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		_, err := m.Generate(ctx, ask("q"))
		if !errors.Is(err, context.Canceled) || time.Since(start) != time.Second {
			t.Errorf("cancelled during a delay: %v after %v", err, time.Since(start))
		}
		if m.Pending() != 0 {
			t.Errorf("a cancelled request did not use its reply")
		}
	})
}

func TestRecordedRequests(t *testing.T) {
	m := llmtest.New().Otherwise(llmtest.Text("ok"))
	temp := 0.5
	req := &llm.Request{
		Messages:    []llm.Message{llm.System("be brief"), llm.User("first"), llm.Assistant("sure"), llm.User("second")},
		Tools:       []llm.ToolSpec{{Name: "search", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "fetch"}},
		Temperature: &temp,
	}
	generate(t, m, req)
	if _, err := llm.Assemble(m.Stream(t.Context(), ask("third"))); err != nil {
		t.Fatal(err)
	}
	// Changing the caller's request afterwards does not change the record.
	req.Messages[1].Parts[0].Text = "changed"
	req.Tools[0].Parameters[2] = 'X'
	temp = 2

	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests recorded, want 2", len(reqs))
	}
	r := reqs[0]
	if r.N != 1 || r.Streamed || r.Node != "" || r.Namespace != "" {
		t.Errorf("first request: N %d, streamed %v, node %q, namespace %q", r.N, r.Streamed, r.Node, r.Namespace)
	}
	if r.Messages[1].Text() != "first" || string(r.Tools[0].Parameters) != `{"type":"object"}` || *r.Temperature != 0.5 {
		t.Errorf("the record changed with the caller's request: %+v", r.Request)
	}
	if r.LastUser() != "second" || r.System() != "be brief" || !cmp.Equal(r.ToolNames(), []string{"search", "fetch"}) {
		t.Errorf("helpers: last user %q, system %q, tools %q", r.LastUser(), r.System(), r.ToolNames())
	}
	last := m.LastRequest()
	if last.N != 2 || !last.Streamed || last.LastUser() != "third" {
		t.Errorf("LastRequest: %+v", last)
	}
	if n := llmtest.New().LastRequest().N; n != 0 {
		t.Errorf("LastRequest of an unused model has N %d", n)
	}
}

func TestExhaustedExplainsItself(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.LastUserContains("hello"), llmtest.Text("hi"))
	m.When(llmtest.Node("planner"), llmtest.Text("plan"))
	generate(t, m, ask("hello there"))
	_, err := m.Generate(t.Context(), ask("hello again, where is the key?"))
	if !errors.Is(err, llmtest.ErrNoReply) {
		t.Fatalf("error %v does not wrap ErrNoReply", err)
	}
	for _, want := range []string{
		"request 2 to llmtest:scripted outside any graph node",
		`last user message "hello again, where is the key?"`,
		"rule 1 used up after 1 replies",
		"rule 2 does not match",
		"the queue was never given replies",
		"Reply or When",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := m.Generate(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "nil *llm.Request") {
		t.Errorf("nil request: %v", err)
	}
	if _, err := llm.Assemble(m.Stream(t.Context(), nil)); err == nil {
		t.Error("nil request to Stream: no error")
	}
}

func TestConcurrentCallers(t *testing.T) {
	m := llmtest.New()
	const n = 40
	for i := range n {
		m.When(llmtest.LastUserContains(fmt.Sprintf("<%d>", i)), llmtest.Text(fmt.Sprintf("answer %d", i)))
	}
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			req := ask(fmt.Sprintf("question <%d>", i))
			var resp *llm.Response
			if i%2 == 0 {
				resp, errs[i] = m.Generate(context.Background(), req)
			} else {
				resp, errs[i] = llm.Assemble(m.Stream(context.Background(), req))
			}
			if errs[i] == nil {
				got[i] = resp.Message.Text()
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != fmt.Sprintf("answer %d", i) {
			t.Errorf("caller %d: %q, %v", i, got[i], errs[i])
		}
	}
	if len(m.Requests()) != n || m.Pending() != 0 {
		t.Errorf("%d requests recorded and %d pending, want %d and 0", len(m.Requests()), m.Pending(), n)
	}
}
