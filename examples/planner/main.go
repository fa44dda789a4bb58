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
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/internal/examples/planner"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	fs := flag.NewFlagSet("planner", flag.ContinueOnError)
	fs.SetOutput(out)
	spec := fs.String("model", "", `model spec ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "ollama:qwen2.5"); default: the scripted model`)
	db := fs.String("db", "planner.db", "SQLite file for the thread")
	answers := fs.String("answers", "", "file of answers to replay at the prompts, one line each")
	fresh := fs.Bool("new", false, "start the thread over")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ex := planner.Example()
	var model llm.Model = ex.Script()
	if *spec != "" {
		m, err := provider.Resolve(*spec)
		if err != nil {
			return err
		}
		model = llm.Retry(m, llm.RetryPolicy{})
	} else {
		fmt.Fprintln(out, "Model: SCRIPTED (pass -model for a real one).")
	}
	return cli.Run(ctx, out, in, ex, model, cli.Flags{DB: *db, Answers: *answers, Fresh: *fresh})
}
