package main

import (
	"context"
	"slices"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/runs"
)

// HelperTool is the frontend tool the "helper" graph's scripted model
// calls when a client offers it.
const HelperTool = "get_location"

// newHelper builds the "helper" graph: a ReAct agent (agent/react) over a
// scripted model, registered as accepting client (frontend) tools. It
// reasons, then calls the client's get_location tool when the run offers
// one and no result is in yet, and otherwise answers. It shows what a
// graph needs to take frontend tools: an agent that reads them from the
// run (react does) and GraphSpec.ClientTools.
func newHelper(context.Context, runs.Assistant) (*graph.Graph, error) {
	m := llmtest.New(llmtest.WithName("scripted:helper"))
	offers := func(r *llmtest.Request) bool {
		return slices.ContainsFunc(r.Tools, func(s llm.ToolSpec) bool { return s.Name == HelperTool })
	}
	lastIsTool := func(r *llmtest.Request) bool {
		return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == llm.RoleTool
	}
	m.When(lastIsTool, llmtest.Reasoning("The client's tool answered.", "Thanks: your app told me where you are.")).Repeat()
	m.When(offers, llmtest.ToolCalls(llmtest.Call(HelperTool, `{"precision":"city"}`))).Repeat()
	m.When(nil, llmtest.Reasoning("Nothing to call.", "Hello from the scripted helper.")).Repeat()
	return react.New(react.Config{Name: "helper", Model: m})
}
