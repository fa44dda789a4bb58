// Command quickstart runs a small research workflow on Trellis and prints
// its streamed run step by step. It shows the three things most graphs need:
// a parallel fan-out (one task per topic, via Send), a conditional loop (the
// writer sends the draft back for another round until it is good enough),
// and typed state keys with reducers that merge the parallel writes.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/trellis-agents/trellis/graph"
)

// The state: typed keys, each with its reducer, declared once.
var (
	Question = graph.NewKey[string]("question")
	Topics   = graph.NewKey[[]string]("topics")
	Notes    = graph.NewKey("notes", graph.Concat[string]()) // parallel writes are appended in task order
	Round    = graph.NewKey("round", graph.Sum[int]())
	Draft    = graph.NewKey[string]("draft")
)

const rounds = 2

func build() (*graph.Graph, error) {
	b := graph.New(Question, Topics, Notes, Round, Draft)
	b.SetName("quickstart")

	b.AddNode("plan", func(ctx context.Context, s graph.State) (graph.Output, error) {
		topics := []string{"history", "design", "trade-offs"}
		if Round.Get(s) > 0 {
			topics = []string{"open questions"} // later rounds dig into what is missing
		}
		graph.Emit(ctx, fmt.Sprintf("planning round %d: %d topics", Round.Get(s)+1, len(topics)))
		return graph.Writes(Topics.Set(topics)), nil
	})
	// One research task per topic, all in the same step.
	b.AddFanout("plan", func(_ context.Context, s graph.State) ([]graph.Target, error) {
		var ts []graph.Target
		for _, t := range Topics.Get(s) {
			ts = append(ts, graph.Send("research", t))
		}
		return ts, nil
	}, "research")
	graph.AddSendNode(b, "research", func(_ context.Context, s graph.State, topic string) (graph.Output, error) {
		note := fmt.Sprintf("%s of %q", topic, Question.Get(s))
		return graph.Writes(graph.Append(Notes, note)), nil
	})
	b.AddEdge("research", "write")
	b.AddNode("write", func(_ context.Context, s graph.State) (graph.Output, error) {
		draft := fmt.Sprintf("draft %d from %d notes", Round.Get(s)+1, len(Notes.Get(s)))
		return graph.Writes(Draft.Set(draft), Round.Set(1)), nil
	})
	// The loop: revise until enough rounds have run.
	b.AddConditionalEdges("write", func(_ context.Context, s graph.State) (string, error) {
		if Round.Get(s) < rounds {
			return "revise", nil
		}
		return "done", nil
	}, map[string]string{"revise": "plan", "done": graph.END})
	b.SetEntry("plan")
	return b.Compile(graph.WithStepLimit(20))
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	g, err := build()
	if err != nil {
		return err
	}
	fmt.Println("graph:")
	fmt.Println(g.Mermaid())

	input := graph.Writes(Question.Set("how do graph runtimes schedule work?"))
	var final graph.State
	for ev, err := range g.Stream(ctx, input, graph.WithEvents(graph.EventUpdates|graph.EventCustom|graph.EventValues)) {
		if err != nil {
			return err
		}
		switch ev.Kind {
		case graph.EventCustom:
			fmt.Printf("step %d  %-8s says: %v\n", ev.Step, ev.Node, ev.Custom)
		case graph.EventUpdates:
			var parts []string
			for _, w := range ev.Update {
				parts = append(parts, fmt.Sprintf("%s=%v", w.Key(), w.Value()))
			}
			fmt.Printf("step %d  %-8s wrote: %s\n", ev.Step, ev.Node, strings.Join(parts, " "))
		case graph.EventValues:
			final = ev.State
		}
	}
	fmt.Printf("\nfinal draft: %s after %d rounds, %d notes\n", Draft.Get(final), Round.Get(final), len(Notes.Get(final)))
	return nil
}
