package guide_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// Approval is what the deploy node asks a person, and Answer what it
// expects back. Both cross processes as JSON.
type Approval struct {
	Version string `json:"version"`
	Risk    string `json:"risk"`
}

// Answer is a person's reply to an Approval.
type Answer struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

var (
	Version = graph.NewKey[string]("version")
	Log     = graph.NewKey("log", graph.Concat[string]())
)

func deployGraph() *graph.Graph {
	b := graph.New(Version, Log)
	b.AddNode("deploy", func(ctx context.Context, s graph.State) (graph.Output, error) {
		// The first run stops here; the resumed run runs the node again
		// from the top and Interrupt returns the answer.
		ans, err := graph.Interrupt[Answer](ctx, Approval{Version: Version.Get(s), Risk: "high"})
		if err != nil {
			return nil, err // an *InterruptError: return it as is
		}
		if !ans.OK {
			return graph.Writes(graph.Append(Log, "not deployed: "+ans.Reason)), nil
		}
		// Side effects go after the Interrupt call, so they run once.
		return graph.Writes(graph.Append(Log, "deployed "+Version.Get(s))), nil
	})
	b.SetEntry("deploy")
	b.AddEdge("deploy", graph.END)
	g, err := b.Compile()
	if err != nil {
		log.Fatal(err)
	}
	return g
}

// Example_interruptAndResume stops a run to ask a person, then resumes the
// thread with the answer (page 03-interrupts.md).
func Example_interruptAndResume() {
	ctx := context.Background()
	g := deployGraph()
	// Interrupts need a checkpointer and a thread: the waiting run is saved
	// there, and any process with the same saver can resume it.
	saver := checkpoint.NewMemory()
	thread := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("release-7")}

	res, err := g.Invoke(ctx, graph.Writes(Version.Set("v1.4.0")), thread...)
	fmt.Println("interrupted:", errors.Is(err, graph.ErrInterrupted), res.Status)
	in := res.Interrupts[0]
	fmt.Printf("node %s asks %s\n", in.Node, in.Payload)

	// Later, perhaps in another process: answer and resume. A nil input
	// continues the thread.
	res, err = g.Invoke(ctx, nil, append(thread, graph.WithResume(Answer{OK: true}))...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, Log.Get(res.State))
	// Output:
	// interrupted: true interrupted
	// node deploy asks {"version":"v1.4.0","risk":"high"}
	// completed [deployed v1.4.0]
}

// Example_interruptParallel answers two interrupts raised by parallel tasks
// of one step, each by its ID.
func Example_interruptParallel() {
	ctx := context.Background()
	Votes := graph.NewKey("votes", graph.Concat[string]())
	b := graph.New(Votes)
	for _, who := range []string{"alice", "bob"} {
		b.AddNode(who, func(ctx context.Context, s graph.State) (graph.Output, error) {
			vote, err := graph.Interrupt[string](ctx, "vote, "+who)
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(Votes, who+": "+vote)), nil
		})
		b.AddEdge(graph.START, who)
		b.AddEdge(who, graph.END)
	}
	g, err := b.Compile()
	if err != nil {
		log.Fatal(err)
	}
	thread := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("poll")}
	res, _ := g.Invoke(ctx, nil, thread...)

	answers := map[string]any{}
	for _, in := range res.Interrupts {
		answers[in.ID] = map[string]string{"alice": "yes", "bob": "no"}[in.Node]
	}
	res, err = g.Invoke(ctx, nil, append(thread, graph.WithResumeMap(answers))...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(answers), "answers:", Votes.Get(res.State))
	// Output:
	// 2 answers: [alice: yes bob: no]
}
