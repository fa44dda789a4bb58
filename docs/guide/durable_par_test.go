package guide_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/workflow"
)

// Asks three suppliers for a quote at once. The second supplier is down on
// the first run, so the run fails; the thread's next run asks only it: the
// other two quotes come from the save.
func Example_parallelSteps() {
	var asked [3]int // runs of each supplier's step; each step counts its own
	down := true
	cheapest, err := workflow.New("quotes", func(ctx context.Context, item string, _ *string) (string, error) {
		var fs []*graph.Future[int]
		for i, supplier := range []string{"acme", "bolt", "crux"} {
			fs = append(fs, graph.Go(ctx, "quote "+supplier, func(context.Context) (int, error) {
				asked[i]++
				if supplier == "bolt" && down {
					return 0, errors.New("bolt is down")
				}
				return 100 - 10*i, nil
			}))
		}
		best := ""
		low := 0
		for i, f := range fs {
			price, err := f.Wait(ctx)
			if err != nil {
				return "", err
			}
			if best == "" || price < low {
				best, low = []string{"acme", "bolt", "crux"}[i], price
			}
		}
		return fmt.Sprintf("%s at %d", best, low), nil
	}, graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	_, err = cheapest.Invoke(ctx, "bolts", graph.WithThread("order-7"))
	fmt.Println("first run:", err != nil)
	down = false
	out, err := cheapest.Resume(ctx, graph.WithThread("order-7"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	fmt.Println("asked acme, bolt, crux:", asked[0], asked[1], asked[2])
	// Output:
	// first run: true
	// crux at 80
	// asked acme, bolt, crux: 1 2 1
}

// A chat that returns only its reply but keeps the whole history for the
// thread's next run (workflow.NewFinal).
func Example_finalValue() {
	chat, _, err := workflow.NewFinal("chat", func(ctx context.Context, msg string, history *[]string) (workflow.Final[string, []string], error) {
		var h []string
		if history != nil {
			h = *history
		}
		reply := fmt.Sprintf("message %d: %s", len(h)/2+1, msg)
		return workflow.Final[string, []string]{Value: reply, Save: append(h, msg, reply)}, nil
	}, graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, msg := range []string{"hello", "again"} {
		reply, err := chat.Invoke(ctx, msg, graph.WithThread("chat-1"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(reply)
	}
	// Output:
	// message 1: hello
	// message 2: again
}
