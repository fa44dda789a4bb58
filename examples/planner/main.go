// Command planner runs the planner example: a plan-and-execute agent that
// organises a team offsite. It asks for the city and a few details, shows
// its plan for approval, runs the plan's steps in parallel levels, revises
// the plan once the venues are known, and asks before it books.
//
//	go run ./examples/planner                          # the scripted model; answer at the prompts
//	go run ./examples/planner -answers internal/examples/planner/testdata/answers.txt
//	go run ./examples/planner -model openai:gpt-4o-mini
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/internal/examples/planner"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func main() { cli.Main(planner.Example(), resolve) }

// run is main with its inputs and outputs passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	return cli.RunArgs(ctx, args, out, in, planner.Example(), resolve)
}

func resolve(spec string) (llm.Model, error) { return provider.Resolve(spec) }
