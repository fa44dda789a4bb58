package router_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
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

// When the router model fails, the turn ends with a polite answer instead
// of a failed run, and the thread's next message is handled as usual.
// The routing model's options and the answer's text are configurable.
func ExampleConfig_unavailable() {
	model := llmtest.New().Reply(llmtest.StatusError(503, "overloaded"), llmtest.Text("Hello! How can I help?"))
	zero := 0.0
	g, err := router.New(router.Config{
		Model:    model,
		Settings: llm.Settings{Temperature: &zero, MaxTokens: 500},
		Prompts:  router.Prompts{Unavailable: "Sorry, the help desk cannot answer right now; please try again shortly."},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("desk")}
	for _, msg := range []string{"Hi", "Hi again"} {
		res, err := g.Invoke(context.Background(), react.Input(msg), opts...)
		if err != nil {
			fmt.Println(err)
			return
		}
		o, _ := router.Finished(res.State)
		fmt.Printf("%s (%s): %s\n", res.Status, o.Reason, o.Answer)
	}
	// Output:
	// completed (unavailable): Sorry, the help desk cannot answer right now; please try again shortly.
	// completed (answer): Hello! How can I help?
}
