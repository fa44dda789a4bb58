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

// Order is the input of the order workflow, Receipt its output.
type Order struct {
	Item  string `json:"item"`
	Price int    `json:"price"`
}

// Receipt says what the order workflow did.
type Receipt struct {
	Payment  string `json:"payment"`
	Shipment string `json:"shipment"`
	Orders   int    `json:"orders"` // on this thread so far
}

// orderWorkflow charges the card, asks a person to approve the shipment
// and ships. charges and shipments count the real side effects.
func orderWorkflow(charges, shipments *int) *workflow.Workflow[Order, Receipt] {
	w, err := workflow.New("order", func(ctx context.Context, o Order, prev *Receipt) (Receipt, error) {
		// A durable step: saved as soon as it returns. When the function
		// runs again (after the interrupt below), the saved payment ID
		// comes back and the card is not charged twice.
		pay, err := graph.Durable(ctx, "charge", func(context.Context) (string, error) {
			*charges++
			return fmt.Sprintf("pay-%s-%d", o.Item, o.Price), nil
		})
		if err != nil {
			return Receipt{}, err
		}
		graph.Emit(ctx, "charged "+pay) // a custom stream event
		ok, err := graph.Interrupt[bool](ctx, "ship "+o.Item+"?")
		if err != nil {
			return Receipt{}, err // the thread stops here until answered
		}
		if !ok {
			return Receipt{Payment: pay, Shipment: "held"}, nil
		}
		ship, err := graph.Durable(ctx, "ship", func(context.Context) (string, error) {
			*shipments++
			return "ship-" + o.Item, nil
		})
		if err != nil {
			return Receipt{}, err
		}
		// prev is the thread's last output: short-term memory.
		n := 1
		if prev != nil {
			n = prev.Orders + 1
		}
		return Receipt{Payment: pay, Shipment: ship, Orders: n}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	return w
}

// Example_durableSteps runs a functional workflow with durable steps
// across an interrupt, twice on one thread (page durable-steps.md).
func Example_durableSteps() {
	ctx := context.Background()
	var charges, shipments int
	w := orderWorkflow(&charges, &shipments)
	thread := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("customer-42")}

	_, err := w.Invoke(ctx, Order{Item: "book", Price: 12}, thread...)
	var stop *graph.InterruptError
	if errors.As(err, &stop) {
		fmt.Printf("asks %s\n", stop.Interrupts[0].Payload)
	}
	r, err := w.Resume(ctx, append(thread, graph.WithResume(true))...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", r)

	// A second order on the same thread: prev carries the first receipt.
	if _, err := w.Invoke(ctx, Order{Item: "pen", Price: 2}, thread...); !errors.Is(err, graph.ErrInterrupted) {
		log.Fatal(err)
	}
	r, err = w.Resume(ctx, append(thread, graph.WithResume(true))...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", r)
	fmt.Println("charges:", charges, "shipments:", shipments)
	// Output:
	// asks "ship book?"
	// {Payment:pay-book-12 Shipment:ship-book Orders:1}
	// {Payment:pay-pen-2 Shipment:ship-pen Orders:2}
	// charges: 2 shipments: 2
}

// Example_durableStream streams a workflow's custom events and its output
// (page durable-steps.md).
func Example_durableStream() {
	ctx := context.Background()
	var charges, shipments int
	w := orderWorkflow(&charges, &shipments)
	thread := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("customer-7"),
		graph.WithEvents(graph.EventCustom | graph.EventUpdates | graph.EventInterrupt)}
	show := func(input graph.Update, opts ...graph.RunOption) {
		for ev, err := range w.Graph().Stream(ctx, input, append(thread, opts...)...) {
			if err != nil {
				log.Fatal(err)
			}
			switch ev.Kind {
			case graph.EventCustom:
				fmt.Println("custom:", ev.Custom)
			case graph.EventInterrupt:
				fmt.Printf("interrupt: %s\n", ev.Interrupts[0].Payload)
			case graph.EventUpdates:
				if r, ok := w.OutputKey().In(ev.Update); ok {
					fmt.Println("output:", r.Shipment)
				}
			}
		}
	}
	show(w.Input(Order{Item: "lamp", Price: 30}))
	// The function runs again from the top: the Emit outside the step is
	// sent again, but the charge comes from the save.
	show(nil, graph.WithResume(true))
	fmt.Println("charges:", charges)
	// Output:
	// custom: charged pay-lamp-30
	// interrupt: "ship lamp?"
	// custom: charged pay-lamp-30
	// output: ship-lamp
	// charges: 1
}
