package testplanner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/testplanner"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/store"
)

// Embedding the test planner: a model, the tools to plan for (an MCP
// client, or the sample server with Sample), a read-only database, and the
// store namespace's project and environment. Runs need a store; the
// thread (here the scope) names the plans' namespace.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "testplanner-example-")
	defer os.RemoveAll(dir)
	app, err := testplanner.New(ctx, testplanner.Config{
		Model:       testplanner.ScriptedModel(),
		Database:    filepath.Join(dir, testplanner.SampleFile),
		Sample:      true, // the sample shop database and MCP server
		Project:     "shop",
		Environment: "dev",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	res, err := app.Graph.Invoke(apps.WithScope(ctx, "run-1"), app.Input(""), graph.WithStore(store.NewMemory()))
	fmt.Println(res.Status, err, len(testplanner.Plans(res.State)))
	// Output: completed <nil> 7
}
