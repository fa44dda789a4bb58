package memory_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/embedtest"
	"github.com/trellis-agents/trellis/tool/memory"
)

// A react agent remembers a user's preferences in one thread and recalls
// them in another: the memories live in the store under the user's
// namespace, not in either thread.
func Example() {
	ctx := context.Background()
	st := store.NewMemory(store.MemoryIndex(store.IndexConfig{Embedder: embedtest.New(64), Fields: []string{"text"}}))
	m := llmtest.New()
	m.Reply(
		// Thread 1: the user states a preference; the model saves it.
		llmtest.ToolCalls(llmtest.Call("remember", `{"memory":"The user is vegetarian and loves spicy food"}`)),
		llmtest.Text("Noted!"),
		// Thread 2: the model looks it up before answering.
		llmtest.ToolCalls(llmtest.Call("recall", `{"query":"what food does the user like"}`)),
		llmtest.Text("How about a spicy chickpea curry?"),
	)
	agent, err := react.New(react.Config{Model: m, Tools: memory.Tools(memory.Config{}), Policy: memory.Policy()})
	if err != nil {
		panic(err)
	}
	saver := checkpoint.NewMemory()
	run := func(thread, text string) *graph.Result {
		res, err := agent.Invoke(ctx, react.Input(text), graph.WithCheckpointer(saver), graph.WithThread(thread),
			graph.WithStore(st), graph.WithRunContext(map[string]any{"user_id": "ann"}))
		if err != nil {
			panic(err)
		}
		return res
	}
	run("monday", "I'm vegetarian, and the spicier the better.")
	res := run("friday", "What should I cook tonight?")
	for _, msg := range react.Messages.Get(res.State) {
		if msg.Role == llm.RoleTool {
			var found []memory.Memory
			if err := json.Unmarshal([]byte(msg.Text()), &found); err != nil {
				panic(err)
			}
			for _, f := range found {
				fmt.Printf("recalled %q (score %.2f)\n", f.Memory, *f.Score)
			}
		}
	}
	answer, _ := react.Answer(res.State)
	fmt.Println(answer)
	// Output:
	// recalled "The user is vegetarian and loves spicy food" (score 0.39)
	// How about a spicy chickpea curry?
}
