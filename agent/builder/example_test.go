package builder_test

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// A writer and a reviewer. After each review a judge decides, from the
// conversation, whether the reviewer asked for changes: if so the writer
// tries again, otherwise the run ends. The scripted model plays the
// writer, the reviewer and the judge.
func Example() {
	model := llmtest.New()
	model.When(llmtest.Namespace("chat:"),
		llmtest.Text("Roses are red."),
		llmtest.Text("Roses are red, the sky is blue."))
	model.When(llmtest.Namespace("review:"),
		llmtest.Text("Too short: add a second line."),
		llmtest.Text("Good."))
	model.When(llmtest.LastUserContains("Condition: the reviewer asked for changes"),
		llmtest.JSON(map[string]any{"holds": true, "reason": "the review asks for a second line"}),
		llmtest.JSON(map[string]any{"holds": false, "reason": "the review approves"}))

	agent, err := builder.New("poet").
		Description("Writes a short poem and has it reviewed.").
		MaxIterations(10).
		LLMNode("chat", "You write short poems.").
		LLMNode("review", "You review poems. Ask for changes when one is needed.").
		Edge("chat", "review").
		When("review", "the reviewer asked for changes", "chat").
		End("review").
		Entry("chat").
		Build(model)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := agent.Run(context.Background(), builder.Input("A poem about roses, please."))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("path:", res.Path)
	for _, j := range res.Judgements {
		fmt.Printf("after %s, %q holds: %v (%s)\n", j.Node, j.Condition, j.Holds, j.Reason)
	}
	fmt.Println("final:", res.FinalMessage)
	fmt.Println("success:", res.Success, "iterations:", res.Iterations)
	// Output:
	// path: [chat review chat review]
	// after review, "the reviewer asked for changes" holds: true (the review asks for a second line)
	// after review, "the reviewer asked for changes" holds: false (the review approves)
	// final: Good.
	// success: true iterations: 4
}

// The builder reports every mistake at once.
func ExampleBuilder_Build_errors() {
	_, err := builder.New("broken").
		LLMNode("chat", "Chat.").
		Edge("chat", "reviw").
		When("review", "changes are needed", "chat").
		Build(llmtest.New())
	fmt.Println(err)
	// Output:
	// builder: agent "broken" does not build (3 problems):
	//   - the edge from "chat" goes to "reviw", which is not an LLM node (nodes: chat) nor graph.END
	//   - the condition "changes are needed" is on "review", which is not an LLM node (nodes: chat)
	//   - the agent has no entry node; set one with Entry
}
