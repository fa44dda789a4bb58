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
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/internal/examples/sqlrouter"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "sqlrouter:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	fs := flag.NewFlagSet("sqlrouter", flag.ContinueOnError)
	fs.SetOutput(out)
	spec := fs.String("model", "", `model spec ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "ollama:qwen2.5"); default: the scripted model`)
	db := fs.String("db", "sqlrouter.db", "SQLite file for the thread; the sample database is created next to it")
	fresh := fs.Bool("new", false, "start the thread over")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ex := sqlrouter.Example()
	var model llm.Model
	if *spec == "" {
		fmt.Fprintln(out, "Model: SCRIPTED (a canned scenario, no real model is called; pass -model for a real one).")
		model = ex.Script()
	} else {
		m, err := provider.Resolve(*spec)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Model: %s\n", m.Name())
		model = llm.Retry(llm.WithTimeout(m, 2*time.Minute), llm.RetryPolicy{})
	}
	return cli.Run(ctx, out, in, ex, model, cli.Flags{DB: *db, Fresh: *fresh})
}
