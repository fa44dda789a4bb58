// Command trellis runs the apps built on Trellis in the terminal: `trellis
// demo` plays the study-schedule scenario, `trellis run APP` runs any app
// (the same as go run ./examples/APP), `trellis graph APP` prints its graph
// as Mermaid, `trellis list` lists the apps (and serve's agent), and `trellis serve` serves
// them over HTTP with LangGraph's threads/runs API (see docs/serve.md).
//
// Without --model (and without OPENAI_API_KEY) the apps run on a scripted
// model that plays a fixed scenario; the banner says which model runs, and
// where. Threads and the apps' data are saved under ./.trellis/ (--database
// moves them): quit at any question, or press Ctrl-C, and run the same
// command again to resume. A run that failed is retried with --resume.
package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/provider/resolve"
	"github.com/trellis-agents/trellis/server"
)

// version is reported by `trellis serve`'s /info; release builds set it
// with -ldflags "-X main.version=...".
var version = "dev"

func main() { terminal.Main("trellis", newRoot()) }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "trellis",
		Short:         "Run the Trellis apps in the terminal, or serve them over HTTP",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(demoCommand(), runCommand(), graphCommand(), listCommand(), serveCommand(), migrateCommand(), transferCommand(), keysCommand(), evalCommand())
	return root
}

func runCommand() *cobra.Command {
	var f terminal.Flags
	c := &cobra.Command{
		Use:   "run APP",
		Short: "Run an app in the terminal, answering its questions at the prompt",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			e, err := catalog.Lookup(args[0])
			if err != nil {
				return err
			}
			return terminal.Verbose(f.Verbose, terminal.Run(c.Context(), terminal.Streams{Out: c.OutOrStdout(), In: c.InOrStdin()}, e, resolve.Provider, terminal.Invocation("trellis run "+e.Name), f))
		},
	}
	terminal.AddFlags(c.Flags(), &f)
	return c
}

func graphCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "graph APP",
		Short: "Print an app's graph as a Mermaid diagram",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			e, err := catalog.Lookup(args[0])
			if err != nil {
				return err
			}
			return terminal.PrintGraph(c.Context(), c.OutOrStdout(), e)
		},
	}
}

func listCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the apps, and the assistants serve offers",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			for _, a := range assistants() {
				fmt.Fprintf(c.OutOrStdout(), "%-12s %s\n", a.name, a.summary)
			}
		},
	}
}

// assistant is one graph trellis serve offers as an assistant.
type assistant struct{ name, summary string }

// assistants are the graphs serve registers: the catalogue's apps, which
// run and graph take too, then the configurable agent, which only serve
// has. list and serve --help both name them from here.
func assistants() []assistant {
	var out []assistant
	for _, e := range catalog.All() {
		out = append(out, assistant{e.Name, e.Summary})
	}
	return append(out, assistant{server.AgentGraph, server.AgentDescription + " (serve only)"})
}

// assistantNames are assistants' names, comma-separated.
func assistantNames() string {
	var names []string
	for _, a := range assistants() {
		names = append(names, a.name)
	}
	return strings.Join(names, ", ")
}

func demoCommand() *cobra.Command {
	var f terminal.Flags
	c := &cobra.Command{
		Use:   "demo",
		Short: "The study-schedule scenario: a form, plan review, approvals, delivery",
		Long: `The study-schedule scenario in the terminal: the agent asks a few questions
in a form, proposes a plan for you to review, asks before every change to the
schedule, and delivers a summary. The thread and the schedule live in
./.trellis/trellis.db (--database): quit at any prompt (q) or press Ctrl-C, and
run demo again to continue where you stopped; --new starts over.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			e, err := catalog.Lookup(catalog.Demo)
			if err != nil {
				return err
			}
			return terminal.Verbose(f.Verbose, terminal.Run(c.Context(), terminal.Streams{Out: c.OutOrStdout(), In: c.InOrStdin()}, e, resolve.Provider, "trellis demo", f))
		},
	}
	terminal.AddFlags(c.Flags(), &f)
	return c
}
