package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/internal/examples/builder"
	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/internal/examples/planner"
	"github.com/trellis-agents/trellis/internal/examples/scheduler"
	"github.com/trellis-agents/trellis/internal/examples/sqlrouter"
	"github.com/trellis-agents/trellis/internal/examples/testplanner"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

// demoExample is the example `trellis demo` runs.
const demoExample = "scheduler"

// catalog lists the examples, explicitly (no registration side effects).
func catalog() []examples.Example {
	return []examples.Example{
		scheduler.Example(),
		builder.Example(),
		planner.Example(),
		sqlrouter.Example(),
		testplanner.Example(),
	}
}

func lookup(name string) (examples.Example, error) {
	var names []string
	for _, ex := range catalog() {
		if ex.Name == name {
			return ex, nil
		}
		names = append(names, ex.Name)
	}
	slices.Sort(names)
	return examples.Example{}, fmt.Errorf("no example %q; the examples are %s", name, strings.Join(names, ", "))
}

// chooseModel resolves --model, or OPENAI_API_KEY's default, or the
// example's scripted model, and says which it is.
func chooseModel(w io.Writer, spec string, ex examples.Example) (llm.Model, error) {
	if spec == "" && os.Getenv("OPENAI_API_KEY") != "" {
		spec = "openai:gpt-4o-mini"
	}
	if spec == "" {
		fmt.Fprintf(w, "Model: SCRIPTED — a canned %s scenario, no real model is called (pass --model or set OPENAI_API_KEY for a real one).\n", ex.Name)
		return ex.Script(), nil
	}
	m, err := provider.Resolve(spec)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "Model: %s\n", m.Name())
	return llm.Retry(llm.WithTimeout(m, 2*time.Minute), llm.RetryPolicy{}), nil
}

func runExample(ctx context.Context, out io.Writer, in io.Reader, ex examples.Example, f runFlags) error {
	model, err := chooseModel(out, f.model, ex)
	if err != nil {
		return err
	}
	return cli.Run(ctx, out, in, ex, model, cli.Flags{DB: f.db, Answers: f.answers, Thread: f.thread, Fresh: f.fresh})
}
