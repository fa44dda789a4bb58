// Command scheduler runs the scheduler example: a planning agent that fills a
// study week in SQLite, asking a form question, having its plan reviewed and
// every change to the schedule approved (the same scenario as trellis demo).
//
//	go run ./examples/scheduler                          # the scripted model
//	go run ./examples/scheduler -model openai:gpt-4o-mini
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/internal/examples/scheduler"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func main() {
	spec := flag.String("model", "", `model spec ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "ollama:qwen2.5"); default: the scripted model`)
	db := flag.String("db", "scheduler.db", "SQLite file for the thread")
	fresh := flag.Bool("new", false, "start the thread over")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ex := scheduler.Example()
	var model llm.Model = ex.Script()
	if *spec != "" {
		m, err := provider.Resolve(*spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		model = llm.Retry(m, llm.RetryPolicy{})
	} else {
		fmt.Println("Model: SCRIPTED (pass -model for a real one).")
	}
	if err := cli.Run(ctx, os.Stdout, os.Stdin, ex, model, cli.Flags{DB: *db, Fresh: *fresh}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
