// Command testplanner writes a test plan for every tool of an MCP server,
// using rows of the server's SQL database, and prints the plans. See
// internal/examples/testplanner for how it works.
//
//	go run ./examples/testplanner                            # scripted model, no network
//	go run ./examples/testplanner -model openai:gpt-4o-mini  # a real model
//
// By default it plans for the sample shop server (served in process) over
// the sample shop database, created when missing. Checkpoints and the
// long-term store share one SQLite file (-state): a run that crashed or was
// stopped with Ctrl-C resumes when started again with the same -thread, and
// a finished thread prints its stored plans without asking the model again.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	cpsqlite "github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples/sqlread"
	"github.com/trellis-agents/trellis/internal/examples/testplanner"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
	stsqlite "github.com/trellis-agents/trellis/store/sqlite"
	"github.com/trellis-agents/trellis/tool/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testplanner:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	dir := filepath.Join(os.TempDir(), "trellis-testplanner")
	fs := flag.NewFlagSet("testplanner", flag.ContinueOnError)
	spec := fs.String("model", "", `model spec for provider.Resolve, such as "openai:gpt-4o-mini" (default: a scripted model for the sample data, no network)`)
	dbPath := fs.String("db", filepath.Join(dir, "shop.db"), "SQLite database to read; the sample shop data is created there when the file is missing")
	state := fs.String("state", filepath.Join(dir, "state.db"), "SQLite file for the checkpoints and the long-term store")
	thread := fs.String("thread", "demo", "thread ID: run again with the same ID to resume it")
	server := fs.String("mcp", "", "command line of a stdio MCP server to plan for (default: the sample shop server, in process)")
	project := fs.String("project", "shop", "project, the first element of the store namespace")
	environment := fs.String("env", "dev", "environment, the second element of the store namespace")
	if err := fs.Parse(args); err != nil {
		return err
	}

	model, err := chooseModel(*spec, out)
	if err != nil {
		return err
	}
	if created, err := testplanner.CreateSampleDB(ctx, *dbPath); err != nil {
		return err
	} else if created {
		fmt.Fprintf(out, "created the sample shop database at %s\n", *dbPath)
	}
	db, err := sqlread.OpenReadOnly(ctx, *dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	var client *mcp.Client
	if *server == "" {
		client, err = testplanner.ConnectSample(ctx)
	} else {
		words := strings.Fields(*server)
		if len(words) == 0 {
			return fmt.Errorf("-mcp %q names no command; give the server's command line, or leave it out for the sample server", *server)
		}
		client, err = mcp.Connect(ctx, mcp.Stdio{Command: words[0], Args: words[1:]})
	}
	if err != nil {
		return err
	}
	defer client.Close()
	st, err := stsqlite.Open(ctx, *state)
	if err != nil {
		return err
	}
	defer st.Close()
	saver, err := cpsqlite.Open(ctx, *state)
	if err != nil {
		return err
	}
	defer saver.Close()

	cfg := testplanner.Config{Model: model, Tools: client, DB: db, Project: *project, Environment: *environment}
	g, err := testplanner.New(cfg)
	if err != nil {
		return err
	}
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(*thread), graph.WithStore(st), graph.WithEvents(graph.EventCustom)}
	input := testplanner.Input(*thread)
	if snap, err := g.GetState(ctx, opts...); err == nil && len(snap.Next) > 0 {
		fmt.Fprintf(out, "thread %q stopped before it finished: resuming it\n", *thread)
		input = nil
	}
	fmt.Fprintf(out, "planning thread %q; checkpoints and store in %s\n", *thread, *state)
	for ev, err := range g.Stream(ctx, input, opts...) {
		if err != nil {
			return fmt.Errorf("%w (run again with -thread %s to resume)", err, *thread)
		}
		if p, ok := ev.Custom.(testplanner.Progress); ok {
			fmt.Fprintf(out, "  %s\n", p)
		}
	}

	plans, err := testplanner.LoadPlans(ctx, st, cfg.Namespace(*thread))
	if err != nil {
		return err
	}
	printPlans(out, plans)
	return nil
}

// chooseModel resolves spec, or returns the scripted model when it is empty.
func chooseModel(spec string, out io.Writer) (llm.Model, error) {
	if spec == "" {
		fmt.Fprintln(out, "model: SCRIPTED (llmtest, no network) - its replies are written for the sample shop server and database; pass -model to use a real one")
		return testplanner.ScriptedModel(), nil
	}
	m, err := provider.Resolve(spec)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "model: %s\n", m.Name())
	return llm.WithTimeout(llm.Retry(m, llm.RetryPolicy{}), 2*time.Minute), nil
}

func printPlans(out io.Writer, plans []testplanner.Plan) {
	if len(plans) == 0 {
		fmt.Fprintln(out, "no plans")
		return
	}
	for _, p := range plans {
		fmt.Fprintf(out, "\n== %s (batch %d, %d query rounds, %d queries)\n", p.Tool, p.Batch+1, p.QueryRounds, p.Queries)
		if p.Note != "" {
			fmt.Fprintf(out, "   data: %s\n", p.Note)
		}
		for _, c := range p.Cases {
			args, err := json.Marshal(c.Arguments)
			if err != nil {
				args = []byte(fmt.Sprint(c.Arguments))
			}
			mark := ""
			if !c.Grounded {
				mark = "  [no argument value from the rows]"
			}
			fmt.Fprintf(out, " - %s: %s\n     expect: %s%s\n", c.Name, args, c.Expected, mark)
			if len(c.DataUsed) > 0 {
				fmt.Fprintf(out, "     rows:   %s\n", strings.Join(c.DataUsed, ", "))
			}
		}
	}
}
