// Command sqlrouter runs the SQL router example: a router agent answers a
// question about a sample library database with four sub-agents (data
// discovery, generate SQL, fix SQL, execute and analyze), passing outputs
// between them by call reference, over a read-only SQLite connection. It
// prints the answer and the chain of calls that produced it.
//
//	go run ./examples/sqlrouter                          # the scripted model
//	go run ./examples/sqlrouter -model openai:gpt-4o-mini
//
// The thread and the sample database (sqlrouter-library.db, created when
// missing) live next to the -db file.
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/internal/examples/sqlrouter"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func main() { cli.Main(sqlrouter.Example(), resolve) }

// run is main with its inputs and outputs passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	return cli.RunArgs(ctx, args, out, in, sqlrouter.Example(), resolve)
}

func resolve(spec string) (llm.Model, error) { return provider.Resolve(spec) }
