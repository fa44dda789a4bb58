package guide_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing/fstest"

	"github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// Example_deepAgent runs a deep agent that plans, loads a skill, hands
// research to a sub-agent and saves a file only once a person approves
// (page deep-agent.md).
func Example_deepAgent() {
	ctx := context.Background()
	skills, err := deep.LoadSkills(fstest.MapFS{
		"haiku/SKILL.md": {Data: []byte("---\nname: haiku\ndescription: Write a haiku.\n---\nThree lines: five, seven and five syllables.\n")},
	}, ".")
	if err != nil {
		log.Fatal(err)
	}

	// The scripted model: the sub-agent answers from its own, fresh
	// context; the agent plans, loads the skill, delegates, then saves.
	model := llmtest.New()
	isSub := llmtest.LastUserContains("Find a fact about autumn")
	model.When(isSub, llmtest.Text("Maple leaves turn red in autumn.")).Repeat()
	model.Reply(
		llmtest.ToolCalls(llmtest.Call("write_todos", `{"todos":[{"content":"research autumn","status":"in_progress"},{"content":"write the haiku","status":"pending"}]}`)),
		llmtest.ToolCalls(llmtest.Call("load_skill", `{"name":"haiku"}`)),
		llmtest.ToolCalls(llmtest.Call("task", `{"subagent_type":"general-purpose","description":"Find a fact about autumn."}`)),
		llmtest.ToolCalls(llmtest.Call("write_file", `{"path":"/haiku.txt","content":"red maple leaves fall\nthe autumn wind carries them\nthe branches stand bare\n"}`)),
		llmtest.ToolCalls(llmtest.Call("write_todos", `{"todos":[{"content":"research autumn","status":"completed"},{"content":"write the haiku","status":"completed"}]}`)),
		llmtest.Text("The haiku is in /haiku.txt."),
	)

	agent, err := deep.New(deep.Config{
		Model:  model,
		Skills: skills,
		Policy: tool.Policy{deep.WriteFileTool: tool.RequireApproval()},
	})
	if err != nil {
		log.Fatal(err)
	}
	st := store.NewMemory()
	thread := []graph.RunOption{graph.WithStore(st), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("haiku")}

	res, err := agent.Invoke(ctx, deep.Input("Write a haiku about autumn and save it."), thread...)
	req, _ := tool.ApprovalFrom(res.Interrupts[0])
	fmt.Println("waiting:", errors.Is(err, graph.ErrInterrupted), req.Tool, req.Summary)

	res, err = agent.Invoke(ctx, nil, append(thread, graph.WithResume(tool.Approve()))...)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range deep.Todos.Get(res.State) {
		fmt.Printf("[%s] %s\n", t.Status, t.Content)
	}
	answer, _ := deep.Answer(res.State)
	fmt.Println(answer)
	it, err := st.Get(ctx, []string{"deep_files", "threads", "haiku"}, "/haiku.txt")
	fmt.Println(err == nil && len(it.Value) > 0)
	// Output:
	// waiting: true write_file write the file /haiku.txt (75 bytes)
	// [completed] research autumn
	// [completed] write the haiku
	// The haiku is in /haiku.txt.
	// true
}
