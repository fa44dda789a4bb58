// Command planner runs the planner example: a plan-and-execute agent that
// organises a team offsite. It asks for the city and a few details, shows
// its plan for approval, runs the plan's steps in parallel levels, revises
// the plan once the venues are known, and asks before it books.
//
//	go run ./examples/planner                          # the scripted model; answer at the prompts
//	go run ./examples/planner -answers apps/planner/testdata/answers.txt
//	go run ./examples/planner --model openai:gpt-4o-mini
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/provider/resolve"
)

func main() { terminal.Main("planner", terminal.Command(planner.Entry(), resolve.Provider)) }

// run is main with its arguments, input and output passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	c := terminal.Command(planner.Entry(), resolve.Provider)
	c.SetArgs(args)
	c.SetOut(out)
	c.SetErr(out)
	c.SetIn(in)
	return c.ExecuteContext(ctx)
}
