package guide_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

var (
	Chat  = llm.NewMessagesKey("chat")
	Words = graph.NewKey[int]("words")
)

// Example_streaming streams a run: the model's tokens as they arrive
// (EventMessages), what each node wrote (EventUpdates) and progress notes
// (EventCustom), each tagged with its step and node (page 05-streaming.md).
func Example_streaming() {
	// A scripted model: no network, the same reply every run.
	model := llmtest.New()
	model.Reply(llmtest.Text("Tides follow the moon."))

	b := graph.New(Chat, Words)
	b.AddNode("answer", func(ctx context.Context, s graph.State) (graph.Output, error) {
		graph.Emit(ctx, "asking "+model.Name())
		// llm.Call streams the reply's tokens into the run's stream when
		// someone asked for EventMessages, and records its usage.
		resp, err := llm.Call(ctx, model, &llm.Request{Messages: Chat.Get(s)})
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(Chat, resp.Message)), nil
	})
	b.AddNode("count", func(ctx context.Context, s graph.State) (graph.Output, error) {
		msgs := Chat.Get(s)
		return graph.Writes(Words.Set(len(strings.Fields(msgs[len(msgs)-1].Text())))), nil
	})
	b.SetEntry("answer")
	b.AddEdge("answer", "count")
	b.AddEdge("count", graph.END)
	g, err := b.Compile()
	if err != nil {
		log.Fatal(err)
	}

	input := graph.Writes(graph.Append(Chat, llm.User("Why are there tides?")))
	kinds := graph.WithEvents(graph.EventMessages | graph.EventUpdates | graph.EventCustom)
	var tokens []string
	for ev, err := range g.Stream(context.Background(), input, kinds) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventMessages:
			tokens = append(tokens, ev.Message.Text) // show them as they come in a real UI
		case graph.EventCustom:
			fmt.Printf("step %d %s: %v\n", ev.Step, ev.Node, ev.Custom)
		case graph.EventUpdates:
			for _, w := range ev.Update {
				if w.Key() == Words.Name() {
					fmt.Printf("step %d %s wrote %s=%v\n", ev.Step, ev.Node, w.Key(), w.Value())
				} else {
					fmt.Printf("step %d %s wrote %s\n", ev.Step, ev.Node, w.Key())
				}
			}
		}
	}
	fmt.Printf("%d tokens: %q\n", len(tokens), strings.Join(tokens, "|"))
	// Output:
	// step 1 answer: asking llmtest:scripted
	// step 1 answer wrote chat
	// step 2 count wrote words=4
	// 6 tokens: "Tide|s fo|llow| the| moo|n."
}
