// Command builder runs the builder example: a support agent whose answer
// node drafts a reply and whose review node checks it, with a model judging
// after each review whether changes were asked for.
//
//	go run ./examples/builder                          # the scripted model
//	go run ./examples/builder --model openai:gpt-4o-mini
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/apps/builder"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/provider/resolve"
)

func main() { terminal.Main("builder", terminal.Command(builder.Entry(), resolve.Provider)) }

// run is main with its arguments, input and output passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	c := terminal.Command(builder.Entry(), resolve.Provider)
	c.SetArgs(args)
	c.SetOut(out)
	c.SetErr(out)
	c.SetIn(in)
	return c.ExecuteContext(ctx)
}
