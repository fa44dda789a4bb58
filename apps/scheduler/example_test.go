package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/scheduler"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// Embedding the scheduler: build it over a model and a SQLite file, run a
// thread with its scope in the context, and answer what it asks.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "scheduler-example-")
	defer os.RemoveAll(dir)
	app, err := scheduler.New(ctx, scheduler.Config{
		Model:    scheduler.Script(), // or any llm.Model, e.g. provider.Resolve("openai:gpt-4o-mini")
		Database: filepath.Join(dir, "app.db"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	thread := "week-1"
	ctx = apps.WithScope(ctx, thread) // this thread's calendar
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread(thread)}
	res, _ := app.Graph.Invoke(ctx, app.Input(""), opts...)
	for len(res.Interrupts) > 0 {
		answers := map[string]any{}
		for _, in := range res.Interrupts {
			if _, ok := planexec.AskFrom(in); ok {
				answers[in.ID] = planexec.FormAnswer(map[string]any{"max_slots": 6, "first": "math", "friday_free": true})
			} else if _, ok := planexec.ReviewFrom(in); ok {
				answers[in.ID] = planexec.ApprovePlan()
			} else {
				answers[in.ID] = tool.Approve()
			}
		}
		res, err = app.Graph.Invoke(ctx, nil, append(opts, graph.WithResumeMap(answers))...)
	}
	fmt.Println(res.Status, err)
	fmt.Print(app.Outcome(ctx, res.State))
	// Output:
	// completed <nil>
	// The week now:
	//   #10 Algebra exercises, set 4: Monday slots 3-4
	//   #20 Review for the algebra quiz: Tuesday slots 1-2
	//   #11 Lab report draft: Tuesday slots 7-8
	//   #23 Essay outline: Wednesday slot 5
	//   #12 Read history chapter 5: Wednesday slot 6
	//   #21 Programming assignment 3: Thursday slots 3-5
	//   #22 Physics problem set: pending
}
