// Command builder runs the builder example: a support agent whose answer
// node drafts a reply and whose review node checks it, with a model judging
// after each review whether changes were asked for.
//
//	go run ./examples/builder                          # the scripted model
//	go run ./examples/builder -model openai:gpt-4o-mini
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/internal/examples/builder"
	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func main() { cli.Main(builder.Example(), resolve) }

// run is main with its inputs and outputs passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	return cli.RunArgs(ctx, args, out, in, builder.Example(), resolve)
}

func resolve(spec string) (llm.Model, error) { return provider.Resolve(spec) }
