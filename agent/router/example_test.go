package router_test

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// A router with two sub-agents. The router model asks one for SQL, then
// hands that SQL to the other by reference; the second is terminal, so its
// answer ends the turn. The next request names an agent, which answers
// without the router model.
func Example() {
	model := llmtest.New()
	// The sub-agents' replies, told apart by the namespace they run in.
	model.When(llmtest.Namespace("sql:"),
		llmtest.Text("SELECT count(*) FROM orders"),
		llmtest.Text("SELECT count(*) FROM customers"))
	model.When(llmtest.Namespace("explain:"), llmtest.Text("It counts the rows of the orders table."))
	// The router model's replies.
	model.Reply(
		llmtest.ToolCalls(llmtest.Call("sql", `{"task":"Count the orders."}`)),                     // call_1
		llmtest.ToolCalls(llmtest.Call("explain", `{"task":"Explain this SQL: {{call:call_1}}"}`)), // call_2
	)
	agent := func(system string) *graph.Graph {
		g, err := react.New(react.Config{Model: model, System: system})
		if err != nil {
			panic(err)
		}
		return g
	}

	g, err := router.New(router.Config{
		Model:  model,
		System: "Answer data questions with your agents.",
		Agents: []router.Agent{
			{Name: "sql", Description: "Writes SQL for a question.", Graph: agent("You write SQL.")},
			{Name: "explain", Description: "Explains SQL in plain words.", Graph: agent("You explain SQL.")},
		},
		Terminal: []string{"explain"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("analyst")}

	res, err := g.Invoke(ctx, react.Input("How many orders are there, and what does the query do?"), opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := router.Finished(res.State)
	fmt.Printf("%s: %s\n", out.Reason, out.Answer)
	rec, _ := tool.LookupCall(res.State, react.Calls, "call_2")
	fmt.Printf("call_2 used the output of %v\n", router.References(rec.Arguments))

	res, err = g.Invoke(ctx, react.Input("@sql Count the customers."), opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ = router.Finished(res.State)
	fmt.Printf("%s: %s\n", out.Reason, out.Answer)
	// Output:
	// terminal: It counts the rows of the orders table.
	// call_2 used the output of [call_1]
	// direct: SELECT count(*) FROM customers
}
