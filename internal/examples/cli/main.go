package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/llm"
)

// Resolver turns a model spec into a model; example mains pass a closure
// over provider.Resolve (this package may not import provider).
type Resolver func(spec string) (llm.Model, error)

// Main is the whole main function of an example: it runs RunArgs with the
// process's arguments and exits 1 on an error.
func Main(ex examples.Example, resolve Resolver) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := RunArgs(ctx, os.Args[1:], os.Stdout, os.Stdin, ex, resolve)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, ex.Name+":", err)
		os.Exit(1)
	}
}

// RunArgs parses an example main's flags (-model, -db, -answers, -thread,
// -new), chooses the model (the scripted one, announced as such, unless
// -model names a real one, which gets retries and a per-call timeout) and
// runs the example with Run.
func RunArgs(ctx context.Context, args []string, out io.Writer, in io.Reader, ex examples.Example, resolve Resolver) error {
	fs := flag.NewFlagSet(ex.Name, flag.ContinueOnError)
	fs.SetOutput(out)
	spec := fs.String("model", "", `model spec ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "ollama:qwen2.5"); default: the scripted model`)
	var f Flags
	fs.StringVar(&f.DB, "db", ex.Name+".db", "SQLite file for the thread, memory and the example's data")
	fs.StringVar(&f.Answers, "answers", "", "file of answers to replay at the prompts, one line each")
	fs.StringVar(&f.Thread, "thread", "", "thread ID (default: the example's name)")
	fs.BoolVar(&f.Fresh, "new", false, "start the thread over")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var model llm.Model
	if *spec == "" {
		fmt.Fprintf(out, "Model: SCRIPTED — a canned %s scenario, no real model is called (pass -model for a real one).\n", ex.Name)
		model = ex.Script()
	} else {
		m, err := resolve(*spec)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Model: %s\n", m.Name())
		model = llm.Retry(llm.WithTimeout(m, 2*time.Minute), llm.RetryPolicy{})
	}
	return Run(ctx, out, in, ex, model, f)
}
