// Command scheduler runs the scheduler example: a planning agent that fills a
// study week in SQLite, asking a form question, having its plan reviewed and
// every change to the schedule approved (the same scenario as trellis demo).
//
//	go run ./examples/scheduler                          # the scripted model
//	go run ./examples/scheduler --model openai:gpt-4o-mini
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/apps/scheduler"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/provider/resolve"
)

func main() { terminal.Main("scheduler", terminal.Command(scheduler.Entry(), resolve.Provider)) }

// run is main with its arguments, input and output passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	c := terminal.Command(scheduler.Entry(), resolve.Provider)
	c.SetArgs(args)
	c.SetOut(out)
	c.SetErr(out)
	c.SetIn(in)
	return c.ExecuteContext(ctx)
}
