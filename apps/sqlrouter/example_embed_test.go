package sqlrouter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trellis-agents/trellis/apps/sqlrouter"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// Embedding the SQL router: a model (AgentModels may give a sub-agent its
// own) and a database — an open sqlread.Database, or a SQLite file opened
// read-only. A run needs a checkpointer (the router may ask a person).
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlrouter-example-")
	defer os.RemoveAll(dir)
	app, err := sqlrouter.New(ctx, sqlrouter.Config{
		Model:    sqlrouter.Script(),
		Database: filepath.Join(dir, sqlrouter.SampleFile),
		Sample:   true, // create the sample library there
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	res, err := app.Graph.Invoke(ctx, app.Input(sqlrouter.Question),
		graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("q1"))
	fmt.Println(res.Status, err)
	fmt.Println(strings.Contains(app.Outcome(ctx, res.State), "- fiction: 8 loans"))
	// Output:
	// completed <nil>
	// true
}
