package guide_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// LookupArgs are the lookup tool's parameters.
type LookupArgs struct {
	Order int `json:"order"`
}

// Example_middleware gives a ReAct agent a chain: PII redaction of the
// user's input, a limit of one lookup per run, and a logging wrapper of
// its own around every model call (page middleware.md).
func Example_middleware() {
	ctx := context.Background()
	lookup := tool.MustFunc("lookup", "Look an order up.",
		func(_ context.Context, a LookupArgs) (string, error) {
			return fmt.Sprintf("order %d: shipped", a.Order), nil
		}, tool.ReadOnly())

	pii, err := middleware.PII(middleware.PIIConfig{Input: true})
	if err != nil {
		log.Fatal(err)
	}
	limit, err := middleware.ToolLimit(middleware.ToolLimitConfig{Tool: "lookup", RunLimit: 1})
	if err != nil {
		log.Fatal(err)
	}
	calls := 0
	count := middleware.ModelFunc("count", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		calls++
		return next(ctx, c)
	})

	model := llmtest.New()
	model.Reply(
		llmtest.ToolCalls(llmtest.Call("lookup", `{"order":7}`), llmtest.Call("lookup", `{"order":8}`)),
		llmtest.Text("Order 7 has shipped; I could not look up order 8."),
	)
	agent, err := react.New(react.Config{
		Model:      model,
		Tools:      []tool.Tool{lookup},
		Middleware: []middleware.Middleware{pii, limit, count},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Invoke(ctx, react.Input("I am ann@example.com: where are orders 7 and 8?"),
		graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"))
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range react.Messages.Get(res.State) {
		if m.Role != llm.RoleAssistant {
			fmt.Printf("%s: %s\n", m.Role, m.Text())
		}
	}
	fmt.Println("model calls:", calls)
	// Output:
	// user: I am [REDACTED:email]: where are orders 7 and 8?
	// tool: order 7: shipped
	// tool: Error: the tool "lookup" may be called at most 1 times per run, and that limit is reached. Go on without it, or answer with what you have.
	// model calls: 2
}

// EmailArgs are the send_email tool's parameters.
type EmailArgs struct {
	To string `json:"to"`
}

// Example_approvalMiddleware asks a person before a write tool runs, with
// the approval middleware, and ends the run once the tool's limit is
// reached (page middleware.md).
func Example_approvalMiddleware() {
	ctx := context.Background()
	send := tool.MustFunc("send_email", "Send an email.",
		func(_ context.Context, a EmailArgs) (string, error) { return "sent to " + a.To, nil })
	limit, err := middleware.ToolLimit(middleware.ToolLimitConfig{Tool: "send_email", RunLimit: 1, EndRun: true,
		EndMessage: "I may send one email per request; ask again for the next."})
	if err != nil {
		log.Fatal(err)
	}
	model := llmtest.New()
	model.Reply(llmtest.ToolCalls(llmtest.Call("send_email", `{"to":"ann@example.com"}`), llmtest.Call("send_email", `{"to":"bob@example.com"}`)))
	agent, err := react.New(react.Config{
		Model: model,
		Tools: []tool.Tool{send},
		// The limit refuses the second call before anyone is asked; then
		// a person approves the first.
		Middleware: []middleware.Middleware{limit, middleware.Approval(tool.Policy{"send_email": tool.RequireApproval()})},
	})
	if err != nil {
		log.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t2")}
	res, err := agent.Invoke(ctx, react.Input("Mail Ann and Bob."), opts...)
	if !errors.Is(err, graph.ErrInterrupted) {
		log.Fatalf("want the run to wait for a person, got %v", err)
	}
	for _, in := range res.Interrupts {
		if req, ok := tool.ApprovalFrom(in); ok {
			fmt.Println("asked:", req.Summary)
		}
	}
	if res, err = agent.Invoke(ctx, nil, append(opts, graph.WithResume(tool.Approve()))...); err != nil {
		log.Fatal(err)
	}
	for _, m := range react.Messages.Get(res.State)[2:] {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// asked: Call send_email with {"to":"ann@example.com"}
	// tool: sent to ann@example.com
	// tool: Error: the tool "send_email" may be called at most 1 times per run, and that limit is reached, so the run ends here.
	// assistant: I may send one email per request; ask again for the next.
}
