// Command sqlrouter runs the SQL router example: a router agent answers a
// question about a sample library database with four sub-agents (data
// discovery, generate SQL, fix SQL, execute and analyze), passing outputs
// between them by call reference, over a read-only SQLite connection. It
// prints the answer and the chain of calls that produced it.
//
//	go run ./examples/sqlrouter                          # the scripted model
//	go run ./examples/sqlrouter --model openai:gpt-4o-mini
//
// The thread and the sample database (sqlrouter-library.db, created when
// missing) live under ./.trellis/ (next to the --database file).
package main

import (
	"context"
	"io"

	"github.com/trellis-agents/trellis/apps/sqlrouter"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/provider/resolve"
)

func main() { terminal.Main("sqlrouter", terminal.Command(sqlrouter.Entry(), resolve.Provider)) }

// run is main with its arguments, input and output passed in, for tests.
func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	c := terminal.Command(sqlrouter.Entry(), resolve.Provider)
	c.SetArgs(args)
	c.SetOut(out)
	c.SetErr(out)
	c.SetIn(in)
	return c.ExecuteContext(ctx)
}
