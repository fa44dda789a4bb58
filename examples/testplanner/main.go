// Command testplanner writes a test plan for every tool of an MCP server,
// using rows of the server's SQL database, and prints the plans. See
// apps/testplanner for how it works. It is the same as
// `trellis run testplanner`: it plans for the sample shop server (served in
// process) over the sample shop database, both kept under ./.trellis/.
//
//	go run ./examples/testplanner                            # scripted model, no network
//	go run ./examples/testplanner --model openai:gpt-4o-mini # a real model
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/apps/testplanner"
	"github.com/trellis-agents/trellis/provider/resolve"
)

func main() { terminal.Main("testplanner", terminal.Command(testplanner.Entry(), resolve.Provider)) }

// run is main with its arguments, input and output passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	c := terminal.Command(testplanner.Entry(), resolve.Provider)
	c.SetArgs(args)
	c.SetOut(out)
	c.SetErr(out)
	c.SetIn(in)
	return c.ExecuteContext(ctx)
}
