package testplanner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/internal/examples/sqlread"
	"github.com/trellis-agents/trellis/llm"
)

// Example describes the example for the CLI: the sample shop server and
// database (created under Env.DataDir), planned on Env.Model.
func Example() examples.Example {
	return examples.Example{
		Name:    "testplanner",
		Summary: "test plans for every tool of an MCP server, grounded in rows of a read-only SQLite database, in batches of 5 kept in the store",
		Script:  func() llm.Model { return ScriptedModel() },
		Open: func(ctx context.Context, env examples.Env) (*examples.Instance, error) {
			path := filepath.Join(env.DataDir, "testplanner-shop.db")
			if _, err := CreateSampleDB(ctx, path); err != nil {
				return nil, err
			}
			db, err := sqlread.OpenReadOnly(ctx, path)
			if err != nil {
				return nil, err
			}
			client, err := ConnectSample(ctx)
			if err != nil {
				db.Close()
				return nil, err
			}
			g, err := New(Config{Model: env.Model, Tools: client, DB: db, Project: "shop", Environment: "dev"})
			if err != nil {
				client.Close()
				db.Close()
				return nil, err
			}
			return &examples.Instance{
				Graph:  g,
				Input:  Input(env.Thread),
				Events: graph.EventCustom,
				Print: func(w io.Writer, ev graph.Event) {
					if p, ok := ev.Custom.(Progress); ok {
						fmt.Fprintf(w, "  %s\n", p)
					}
				},
				Outcome: func(s graph.State) string {
					var b strings.Builder
					for _, p := range Plans(s) {
						fmt.Fprintf(&b, "%s: %d cases (batch %d, %d query rounds)\n", p.Tool, len(p.Cases), p.Batch+1, p.QueryRounds)
					}
					return b.String()
				},
				Close: func() error { return errors.Join(client.Close(), db.Close()) },
			}, nil
		},
	}
}
