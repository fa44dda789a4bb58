// Command trellis runs the example systems built on Trellis: `trellis demo`
// plays the study-schedule scenario in the terminal, `trellis run EXAMPLE`
// runs any example, `trellis graph EXAMPLE` prints its graph as Mermaid.
//
// Without --model (and without OPENAI_API_KEY) the examples run on a
// scripted model that plays a fixed scenario; it says so when it starts.
// Threads are saved in an embedded SQLite file (--db, default ./trellis.db):
// quit at any question and run the same command again to resume.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/trellis-agents/trellis/internal/examples/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "trellis:", err)
		os.Exit(1)
	}
}

// flags shared by the commands that run an example.
type runFlags struct {
	model   string
	db      string
	answers string
	thread  string
	fresh   bool
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "trellis",
		Short:         "Run the Trellis example agents",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(demoCommand(), runCommand(), graphCommand(), listCommand())
	return root
}

func addRunFlags(c *cobra.Command, f *runFlags) {
	c.Flags().StringVar(&f.model, "model", "", `model spec, e.g. "openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "ollama:qwen2.5" (default: OPENAI_API_KEY selects openai:gpt-4o-mini, else the scripted model)`)
	c.Flags().StringVar(&f.db, "db", "trellis.db", "SQLite file holding threads, memory and the examples' data")
	c.Flags().StringVar(&f.answers, "answers", "", "file of answers to replay at the prompts, one per line (as typed)")
	c.Flags().StringVar(&f.thread, "thread", "", "thread ID (default: the example's name)")
	c.Flags().BoolVar(&f.fresh, "new", false, "forget the saved thread and start over")
}

func runCommand() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run EXAMPLE",
		Short: "Run an example in the terminal, answering its questions at the prompt",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ex, err := lookup(args[0])
			if err != nil {
				return err
			}
			return runExample(c.Context(), c.OutOrStdout(), c.InOrStdin(), ex, f)
		},
	}
	addRunFlags(c, &f)
	return c
}

func graphCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "graph EXAMPLE",
		Short: "Print an example's graph as a Mermaid diagram",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ex, err := lookup(args[0])
			if err != nil {
				return err
			}
			return cli.PrintGraph(c.Context(), c.OutOrStdout(), ex)
		},
	}
}

func listCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the examples",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			for _, ex := range catalog() {
				fmt.Fprintf(c.OutOrStdout(), "%-12s %s\n", ex.Name, ex.Summary)
			}
		},
	}
}

func demoCommand() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "demo",
		Short: "The study-schedule scenario: a plan, a question, plan review, approvals, delivery",
		Long: `The study-schedule scenario in the terminal: the agent asks a few questions
in a form, proposes a plan for you to review, asks before every change to the
schedule, and delivers a summary. The thread and the schedule live in
./trellis.db (--db): quit at any prompt (q) and run demo again to continue
where you stopped; --new starts over.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ex, err := lookup(demoExample)
			if err != nil {
				return err
			}
			return runExample(c.Context(), c.OutOrStdout(), c.InOrStdin(), ex, f)
		},
	}
	addRunFlags(c, &f)
	return c
}
