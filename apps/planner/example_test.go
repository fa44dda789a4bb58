package planner_test

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// Embedding the planner: a model (and optionally an Agency, prompts and a
// round budget); each thread's scope gets its own sample agency. The run
// asks questions, a plan review and an approval through interrupts.
func Example() {
	ctx := apps.WithScope(context.Background(), "offsite-1")
	app, err := planner.New(ctx, planner.Config{Model: planner.Script()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("offsite-1")}
	res, err := app.Graph.Invoke(ctx, app.Input(""), opts...)
	for len(res.Interrupts) > 0 {
		answers := map[string]any{}
		for _, in := range res.Interrupts {
			if a, ok := planexec.AskFrom(in); ok && a.Mode == planexec.AskSelect {
				answers[in.ID] = planexec.ChoiceAnswer("Lisbon")
			} else if ok {
				answers[in.ID] = planexec.FormAnswer(map[string]any{"people": 12, "length": planner.Lengths[1]})
			} else if _, ok := planexec.ReviewFrom(in); ok {
				answers[in.ID] = planexec.ApprovePlan()
			} else {
				answers[in.ID] = tool.Approve()
			}
		}
		res, err = app.Graph.Invoke(ctx, nil, append(opts, graph.WithResumeMap(answers))...)
	}
	fmt.Println(res.Status, err)
	// Output: completed <nil>
}
