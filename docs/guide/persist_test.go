package guide_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
)

var (
	Items = graph.NewKey("items", graph.Concat[string]())
	Total = graph.NewKey("total", graph.Sum[int]())
)

func cartGraph() *graph.Graph {
	b := graph.New(Items, Total)
	b.AddNode("price", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(Total.Set(10)), nil // every item costs 10
	})
	b.SetEntry("price")
	b.AddEdge("price", graph.END)
	g, err := b.Compile()
	if err != nil {
		log.Fatal(err)
	}
	return g
}

// Example_persistence keeps a thread in a SQLite file, continues it across
// runs (and Savers), reads its history and forks it from an older
// checkpoint (page 04-persistence.md).
func Example_persistence() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "trellis-guide")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "threads.db")
	g := cartGraph()

	// First process: one run on thread "cart-1".
	saver, err := sqlite.Open(ctx, path)
	if err != nil {
		log.Fatal(err)
	}
	thread := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("cart-1")}
	if _, err := g.Invoke(ctx, graph.Writes(graph.Append(Items, "tea")), thread...); err != nil {
		log.Fatal(err)
	}
	saver.Close()

	// Second process: the same file, the same thread. The new input is
	// applied on top of the saved state.
	saver, err = sqlite.Open(ctx, path)
	if err != nil {
		log.Fatal(err)
	}
	defer saver.Close()
	thread = []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("cart-1")}
	res, err := g.Invoke(ctx, graph.Writes(graph.Append(Items, "cake")), thread...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(Items.Get(res.State), Total.Get(res.State))

	// The history, newest first: one checkpoint per step of each run.
	var afterTea checkpoint.Ref
	for snap, err := range g.History(ctx, checkpoint.ListOptions{}, thread...) {
		if err != nil {
			log.Fatal(err)
		}
		md := snap.Metadata
		fmt.Printf("step %d %-5s items=%v next=%v\n", md.Step, md.Source, Items.Get(snap.Values), snap.Next)
		if afterTea.ID == "" && len(Items.Get(snap.Values)) == 1 && len(snap.Next) == 0 {
			afterTea = snap.Checkpoint // the end of the first run
		}
	}

	// Fork: a new branch from the end of the first run, with another item.
	// The original branch stays as it was.
	fork := append(thread, graph.WithCheckpointID(afterTea.ID))
	res, err = g.Invoke(ctx, graph.Writes(graph.Append(Items, "scones")), fork...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("fork:", Items.Get(res.State), Total.Get(res.State))
	latest, err := g.GetState(ctx, thread...)
	if err != nil {
		log.Fatal(err)
	}
	// The thread's latest checkpoint is now the fork's.
	fmt.Println("latest:", Items.Get(latest.Values))
	// Output:
	// [tea cake] 20
	// step 4 loop  items=[tea cake] next=[]
	// step 3 loop  items=[tea cake] next=[price]
	// step 2 input items=[tea] next=[__start__]
	// step 1 loop  items=[tea] next=[]
	// step 0 loop  items=[tea] next=[price]
	// step -1 input items=[] next=[__start__]
	// fork: [tea scones] 20
	// latest: [tea scones]
}
