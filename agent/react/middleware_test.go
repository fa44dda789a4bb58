package react_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// mw returns m, and panics on a constructor error (a broken test).
func mw(m middleware.Middleware, err error) middleware.Middleware {
	if err != nil {
		panic(err)
	}
	return m
}

// PII: the user's message is redacted in state before the model sees it,
// and the model's reply is saved and streamed redacted.
func TestMiddlewarePIIOnReact(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("Sure, I will mail bob@corp.example about it."))
	pii, err := middleware.PII(middleware.PIIConfig{})
	g := mustNew(t, react.Config{Model: m, Middleware: []middleware.Middleware{mw(pii, err)}})
	var streamed strings.Builder
	var final graph.State
	for ev, err := range g.Stream(context.Background(), react.Input("My card is 4111-1111-1111-1111, mail me at ann@home.example"),
		graph.WithEvents(graph.EventMessages|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventMessages:
			streamed.WriteString(ev.Message.Text)
		case graph.EventValues:
			final = ev.State
		}
	}
	last := m.LastRequest()
	if got := last.LastUser(); got != "My card is [REDACTED:card], mail me at [REDACTED:email]" {
		t.Errorf("the model saw %q", got)
	}
	msgs := react.Messages.Get(final)
	if len(msgs) != 2 || strings.Contains(msgs[0].Text(), "4111") || strings.Contains(msgs[1].Text(), "bob@") {
		t.Errorf("state holds %q", roles(msgs))
	}
	if s := streamed.String(); s != "Sure, I will mail [REDACTED:email] about it." {
		t.Errorf("streamed %q", s)
	}
}

// Limits per run: of three parallel calls with a run limit of two, the
// first two run; the count starts again on the next turn. The thread
// limit holds across turns, read from the checkpointed state.
func TestMiddlewareToolLimit(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"A"}`), llmtest.Call("weather", `{"city":"B"}`), llmtest.Call("weather", `{"city":"C"}`)),
		llmtest.Text("done 1"),
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"D"}`), llmtest.Call("weather", `{"city":"E"}`)),
		llmtest.Text("done 2"),
	)
	var r ran
	lim := mw(middleware.ToolLimit(middleware.ToolLimitConfig{Tool: "weather", RunLimit: 2, ThreadLimit: 3}))
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, Middleware: []middleware.Middleware{lim}})
	opts := threadOpts("t")
	res, err := g.Invoke(context.Background(), react.Input("go"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if r.get("weather:A") != 1 || r.get("weather:B") != 1 || r.get("weather:C") != 0 {
		t.Errorf("ran %v", r.n)
	}
	refused := react.Calls.Get(res.State)
	if rec := refused["call_3"]; !strings.Contains(rec.Error, "run limit") {
		t.Errorf("call_3 record %+v", rec)
	}
	res, err = g.Invoke(context.Background(), react.Input("again"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Run count reset (D may run), thread limit 3 reached (E may not).
	if r.get("weather:D") != 1 || r.get("weather:E") != 0 {
		t.Errorf("second turn ran %v", r.n)
	}
	msgs := react.Messages.Get(res.State)
	if last := msgs[len(msgs)-2]; !last.IsError || !strings.Contains(last.Text(), "at most 3 times in this conversation") {
		t.Errorf("E answered %q", last.Text())
	}
}

// The thread count survives an approval interrupt: the approved call is
// counted when it runs on resume, and the next call is refused.
func TestMiddlewareToolLimitAcrossInterrupt(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("send_email", `{"to":"a@x.io","body":"1"}`)),
		llmtest.ToolCalls(llmtest.Call("send_email", `{"to":"b@x.io","body":"2"}`)),
		llmtest.Text("done"),
	)
	var r ran
	lim := mw(middleware.ToolLimit(middleware.ToolLimitConfig{ThreadLimit: 1}))
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{sendEmail(&r)}, Middleware: []middleware.Middleware{lim}})
	opts := threadOpts("t")
	_, err := g.Invoke(context.Background(), react.Input("mail both"), opts...)
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("want an approval interrupt, got %v", err)
	}
	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	if r.get("send_email:a@x.io") != 1 || r.get("send_email:b@x.io") != 0 {
		t.Errorf("ran %v", r.n)
	}
	if ans, _ := react.Answer(res.State); ans == "" || len(res.Interrupts) != 0 {
		t.Errorf("answer %q, interrupts %v", ans, res.Interrupts)
	}
}

// Offload: a large result goes to the store, the model sees a preview
// and a handle, and the read tool returns the rest.
func TestMiddlewareOffload(t *testing.T) {
	var r ran
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("search", `{"q":"x"}`)),
		llmtest.ToolCalls(llmtest.Call(middleware.ReadResultTool, `{"handle":"call_1","offset":100,"length":50}`)),
		llmtest.Text("read it"),
	)
	off := mw(middleware.Offload(middleware.OffloadConfig{MinRunes: 200, Preview: 100}))
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{search(&r, 1000)}, Middleware: []middleware.Middleware{off}})
	st := store.NewMemory()
	res, err := g.Invoke(context.Background(), react.Input("search"), append(threadOpts("t"), graph.WithStore(st))...)
	if err != nil {
		t.Fatal(err)
	}
	msgs := react.Messages.Get(res.State)
	first, read := msgs[2].Text(), msgs[4].Text()
	if len(first) > 600 || !strings.Contains(first, `handle "call_1"`) {
		t.Errorf("offloaded result: %q", first)
	}
	if !strings.HasPrefix(read, strings.Repeat("x", 50)+"\n\n[850 more characters; continue at offset 150.]") {
		t.Errorf("read tool: %q", read)
	}
	if it, err := st.Get(context.Background(), []string{"tool_results", "t"}, "call_1"); err != nil || it == nil {
		t.Errorf("store: %v %v", it, err)
	}
}

// A tool wrapper can change arguments; a model wrapper sees the agent's
// request, and turn hooks run once per turn.
func TestMiddlewareHooksOnReact(t *testing.T) {
	m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Osl"}`)), llmtest.Text("sunny"))
	var r ran
	var log []string
	fix := middleware.ToolFunc("fix", func(ctx context.Context, c *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
		c.Call.Arguments = `{"city":"Oslo"}`
		return next(ctx, c)
	})
	before := middleware.BeforeTurnFunc("before", func(_ context.Context, t *middleware.Turn) error {
		log = append(log, "before:"+t.Messages[len(t.Messages)-1].Text())
		return nil
	})
	after := middleware.AfterTurnFunc("after", func(_ context.Context, t *middleware.Turn) error {
		log = append(log, "after:"+t.Answer.Text())
		t.Answer.Parts = []llm.Part{llm.Text(t.Answer.Text() + " (checked)")}
		return nil
	})
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, Middleware: []middleware.Middleware{fix, before, after}})
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	if err != nil {
		t.Fatal(err)
	}
	if r.get("weather:Oslo") != 1 {
		t.Errorf("ran %v", r.n)
	}
	if ans, _ := react.Answer(res.State); ans != "sunny (checked)" || !slices.Equal(log, []string{"before:Oslo?", "after:sunny"}) {
		t.Errorf("answer %q, hooks %v", ans, log)
	}
	if _, err := react.New(react.Config{Model: m, Middleware: []middleware.Middleware{fix, fix}}); err == nil || !strings.Contains(err.Error(), "Config.Middleware") {
		t.Errorf("duplicate middleware: %v", err)
	}
}

// The step budget is middleware outside the caller's chain: a user's model
// wrapper sees the final request as it is sent, tools forbidden.
func TestMiddlewareSeesTheBudgetFinish(t *testing.T) {
	m := loopingModel(false)
	var r ran
	var choices []llm.ToolChoiceMode
	look := middleware.ModelFunc("look", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		choices = append(choices, c.Request.ToolChoice.Mode)
		return next(ctx, c)
	})
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, Middleware: []middleware.Middleware{look}})
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"), graph.WithStepLimit(3))
	if err != nil {
		t.Fatal(err)
	}
	if ans, _ := react.Answer(res.State); ans != "Best I can say: sunny." || !slices.Equal(choices, []llm.ToolChoiceMode{"", llm.ToolChoiceNone}) {
		t.Errorf("answer %q, tool choices seen %v", ans, choices)
	}
	last := m.LastRequest()
	if got := last.Messages[len(last.Messages)-1].Text(); got != react.DefaultBudgetPrompt {
		t.Errorf("the final request ends with %q", got)
	}
	if _, err := react.New(react.Config{Model: m, Middleware: []middleware.Middleware{middleware.ModelFunc("step_budget", nil)}}); err == nil {
		t.Error("a middleware named like the agent's own was accepted")
	}
}
