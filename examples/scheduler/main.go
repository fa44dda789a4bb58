// Command scheduler runs the scheduler example: a planning agent that fills a
// study week in SQLite, asking a form question, having its plan reviewed and
// every change to the schedule approved (the same scenario as trellis demo).
//
//	go run ./examples/scheduler                          # the scripted model
//	go run ./examples/scheduler -model openai:gpt-4o-mini
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/internal/examples/scheduler"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func main() { cli.Main(scheduler.Example(), resolve) }

// run is main with its inputs and outputs passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	return cli.RunArgs(ctx, args, out, in, scheduler.Example(), resolve)
}

func resolve(spec string) (llm.Model, error) { return provider.Resolve(spec) }
