package react_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// A tool limit with EndRun refuses the call past the limit, lets the
// other calls of the round finish, and ends the turn with its message
// without asking the model again; the next turn runs normally.
func TestMiddlewareToolLimitEndsTheRun(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("weather", `{"city":"A"}`), llmtest.Call("weather", `{"city":"B"}`)),
		llmtest.Text("second turn"),
	)
	var r ran
	lim := mw(middleware.ToolLimit(middleware.ToolLimitConfig{Tool: "weather", RunLimit: 1, EndRun: true}))
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, Middleware: []middleware.Middleware{lim}})
	opts := threadOpts("t")
	res, err := g.Invoke(context.Background(), react.Input("go"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if r.get("weather:A") != 1 || r.get("weather:B") != 0 {
		t.Errorf("ran %v", r.n)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("the model was asked %d times; want once (the limit ends the run)", n)
	}
	ans, ok := react.Answer(res.State)
	if !ok || !strings.Contains(ans, `the tool "weather" may be called at most 1 times per run`) {
		t.Errorf("answer %q, %v", ans, ok)
	}
	if rec := react.Calls.Get(res.State)["call_2"]; !strings.Contains(rec.Error, "the run was ended") {
		t.Errorf("call_2 record %+v", rec)
	}
	res, err = g.Invoke(context.Background(), react.Input("again"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if ans, _ := react.Answer(res.State); ans != "second turn" {
		t.Errorf("second turn answered %q; want the model's reply", ans)
	}
}

// The approval middleware placed by the caller replaces the agent's own:
// its policy applies, where it stands in the chain.
func TestApprovalPlacedInTheChain(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("send_email", `{"to":"a@x.io","body":"1"}`)),
		llmtest.Text("sent"),
	)
	var r ran
	seen := ""
	spy := middleware.ToolFunc("spy", func(ctx context.Context, c *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
		res, err := next(ctx, c)
		if res != nil {
			seen = string(res.Approval)
		}
		return res, err
	})
	approve := middleware.Approval(tool.Policy{"send_email": tool.AutoApprove()})
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{sendEmail(&r)}, Middleware: []middleware.Middleware{approve, spy}})
	res, err := g.Invoke(context.Background(), react.Input("mail"), threadOpts("t")...)
	if err != nil {
		t.Fatalf("the caller's policy approves the call, yet: %v", err)
	}
	if r.get("send_email:a@x.io") != 1 || seen != "" {
		t.Errorf("ran %v; inner middleware saw approval %q", r.n, seen)
	}
	if ans, _ := react.Answer(res.State); ans != "sent" {
		t.Errorf("answer %q", ans)
	}

	// Both a Policy and an approval middleware: one would be ignored.
	_, err = react.New(react.Config{Model: m, Tools: []tool.Tool{sendEmail(&r)}, Policy: tool.Policy{},
		Middleware: []middleware.Middleware{approve}})
	if err == nil || !strings.Contains(err.Error(), "Config.Policy is set and Config.Middleware has an approval middleware") {
		t.Errorf("Policy and Approval together: %v", err)
	}
}

// Approval is innermost by default: middleware in the caller's chain sees
// the outcome, and a tool limit refuses a call before anyone is asked.
func TestApprovalInnermostByDefault(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("send_email", `{"to":"a@x.io","body":"1"}`), llmtest.Call("send_email", `{"to":"b@x.io","body":"2"}`)),
		llmtest.Text("done"),
	)
	var r ran
	var outcomes []string
	spy := middleware.ToolFunc("spy", func(ctx context.Context, c *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
		res, err := next(ctx, c)
		if res != nil {
			outcomes = append(outcomes, c.Call.ID+":"+string(res.Approval))
		}
		return res, err
	})
	lim := mw(middleware.ToolLimit(middleware.ToolLimitConfig{Tool: "send_email", RunLimit: 1}))
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{sendEmail(&r)}, Middleware: []middleware.Middleware{spy, lim}})
	opts := threadOpts("t")
	res, err := g.Invoke(context.Background(), react.Input("mail both"), opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("err %v, interrupts %+v; want one approval (the second call is over the limit)", err, res.Interrupts)
	}
	if req, ok := tool.ApprovalFrom(res.Interrupts[0]); !ok || req.CallID != "call_1" {
		t.Fatalf("approval %+v, %v", req, ok)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Reject("no")))...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(outcomes, ",") != "call_2:,call_1:rejected" {
		t.Errorf("the chain saw outcomes %v", outcomes)
	}
	rec := react.Calls.Get(res.State)["call_1"]
	if rec.Approval != tool.OutcomeRejected || rec.Error != "rejected by a person: no" || r.get("send_email:a@x.io") != 0 {
		t.Errorf("record %+v, ran %v", rec, r.n)
	}
}

// toolbox gives the agent a write tool, as a middleware.
type toolbox struct{ t tool.Tool }

func (toolbox) Name() string { return "toolbox" }
func (b toolbox) BeforeTurn(context.Context, *middleware.Turn) error {
	return nil
}
func (b toolbox) Tools() []tool.Tool { return []tool.Tool{b.t} }

// A policy may name a tool a middleware gives (middleware.Toolbox): the
// rule applies to it, and a rule naming no tool at all is still an error.
func TestApprovalPolicyCoversToolboxTools(t *testing.T) {
	m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call("send_email", `{"to":"a@x.io","body":"1"}`)), llmtest.Text("sent"))
	var r ran
	g := mustNew(t, react.Config{Model: m, Policy: tool.Policy{"send_email": tool.AutoApprove()},
		Middleware: []middleware.Middleware{toolbox{sendEmail(&r)}}})
	if _, err := g.Invoke(context.Background(), react.Input("mail")); err != nil {
		t.Fatalf("the auto-approved toolbox tool: %v", err)
	}
	if r.get("send_email:a@x.io") != 1 {
		t.Errorf("ran %v", r.n)
	}
	_, err := react.New(react.Config{Model: m, Policy: tool.Policy{"ghost": tool.AutoApprove()},
		Middleware: []middleware.Middleware{toolbox{sendEmail(&r)}}})
	if err == nil || !strings.Contains(err.Error(), `the policy has a rule for "ghost", which is not one of the tools (send_email)`) {
		t.Errorf("a rule for no tool: %v", err)
	}
}
