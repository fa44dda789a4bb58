package guide_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// RefundArgs are the refund tool's parameters.
type RefundArgs struct {
	Order  int `json:"order" jsonschema:"the order to refund"`
	Amount int `json:"amount" jsonschema:"in cents"`
}

// Example_agentApproval runs a ReAct agent whose write tool waits for a
// person: the run stops with an approval request, and the resumed run
// carries out the call once approved (page 07-agents.md).
func Example_agentApproval() {
	ctx := context.Background()
	refund := tool.MustFunc("refund", "Refund an order.",
		func(ctx context.Context, a RefundArgs) (string, error) {
			return fmt.Sprintf("refunded %d cents on order %d", a.Amount, a.Order), nil
		}) // not ReadOnly: a write tool, so it asks first

	model := llmtest.New()
	model.Reply(
		llmtest.ToolCalls(llmtest.Call("refund", `{"order":42,"amount":1299}`)),
		llmtest.Text("Order 42 is refunded."),
	)
	agent, err := react.New(react.Config{Model: model, Tools: []tool.Tool{refund}})
	if err != nil {
		log.Fatal(err)
	}
	thread := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("ticket-42")}

	res, err := agent.Invoke(ctx, react.Input("Refund order 42, it arrived broken."), thread...)
	fmt.Println("waiting:", errors.Is(err, graph.ErrInterrupted))
	req, ok := tool.ApprovalFrom(res.Interrupts[0])
	fmt.Println(ok, req.Tool, string(req.Arguments))

	// tool.Reject("reason") would tell the model no; tool.Edit(args)
	// would run the call with other arguments.
	res, err = agent.Invoke(ctx, nil, append(thread, graph.WithResume(tool.Approve()))...)
	if err != nil {
		log.Fatal(err)
	}
	answer, _ := react.Answer(res.State)
	fmt.Println(answer)
	for _, rec := range react.Calls.Get(res.State) {
		fmt.Println(rec.Tool, rec.Approval, "->", rec.Result)
	}
	// Output:
	// waiting: true
	// true refund {"order":42,"amount":1299}
	// Order 42 is refunded.
	// refund approved -> refunded 1299 cents on order 42
}

// Example_router has a router model hand a task to a sub-agent (itself a
// ReAct agent) and answer with its result.
func Example_router() {
	ctx := context.Background()
	weatherModel := llmtest.New()
	weatherModel.Reply(llmtest.Text("14°C and windy."))
	weatherAgent, err := react.New(react.Config{Name: "weather", Model: weatherModel, MaxSteps: 10})
	if err != nil {
		log.Fatal(err)
	}

	routerModel := llmtest.New()
	routerModel.Reply(
		llmtest.ToolCalls(llmtest.Call("weather_agent", `{"task":"Weather in Oslo now"}`)),
		llmtest.Text("Oslo: 14°C and windy."),
	)
	g, err := router.New(router.Config{
		Model:  routerModel,
		System: "You hand questions to the right specialist.",
		Agents: []router.Agent{{Name: "weather_agent", Description: "Answers weather questions.", Graph: weatherAgent}},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := g.Invoke(ctx, react.Input("What's the weather in Oslo?"))
	if err != nil {
		log.Fatal(err)
	}
	out, _ := router.Finished(res.State)
	fmt.Println(out.Reason, out.Answer)
	asked := weatherModel.LastRequest().Messages
	fmt.Println("sub-agent asked:", asked[len(asked)-1].Text())
	// Output:
	// answer Oslo: 14°C and windy.
	// sub-agent asked: Weather in Oslo now
}
