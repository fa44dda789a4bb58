package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/trellis-agents/trellis/graph"
)

// BenchmarkDurableStep prices a durable step (graph.Durable): one run of
// a thread does the same small work steps times, three ways —
//
//   - inline: in one node, not durable (a crash repeats all of it);
//   - durable: in one node, each piece a durable step (saved as it
//     returns);
//   - nodes: one node per piece, chained (each piece a superstep with its
//     own checkpoint, the graph way to make each piece durable).
//
// ns/step is the run's time divided by steps; the durable step's overhead
// is its ns/step minus inline's.
func BenchmarkDurableStep(b *testing.B) {
	results := graph.NewKey("results", graph.Concat[string]())
	work := func(i int) string { return "piece " + strconv.Itoa(i) }
	build := func(b *testing.B, way string, steps int) *graph.Graph {
		gb := graph.New(results)
		switch way {
		case "nodes":
			prev := graph.START
			for i := range steps {
				name := fmt.Sprint("n", i)
				gb.AddNode(name, func(context.Context, graph.State) (graph.Output, error) {
					return graph.Writes(graph.Append(results, work(i))), nil
				})
				gb.AddEdge(prev, name)
				prev = name
			}
			gb.AddEdge(prev, graph.END)
		default:
			durable := way == "durable"
			gb.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
				out := make([]string, 0, steps)
				for i := range steps {
					if !durable {
						out = append(out, work(i))
						continue
					}
					v, err := graph.Durable(ctx, "piece", func(context.Context) (string, error) { return work(i), nil })
					if err != nil {
						return nil, err
					}
					out = append(out, v)
				}
				return graph.Writes(graph.Append(results, out...)), nil
			})
			gb.SetEntry("work")
			gb.AddEdge("work", graph.END)
		}
		g, err := gb.Compile(graph.WithStepLimit(steps + 5))
		if err != nil {
			b.Fatal(err)
		}
		return g
	}
	for _, sk := range savers() {
		if sk.name == "redis" {
			continue
		}
		for _, steps := range []int{1, 10} {
			for _, way := range []string{"inline", "durable", "nodes"} {
				b.Run(fmt.Sprintf("%s/steps=%d/%s", sk.name, steps, way), func(b *testing.B) {
					saver, closeFn := sk.open(b)
					defer closeFn()
					g := build(b, way, steps)
					ctx := context.Background()
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						res, err := g.Invoke(ctx, nil, graph.WithCheckpointer(saver), graph.WithThread(strconv.Itoa(i)))
						if err != nil {
							b.Fatal(err)
						}
						if n := len(results.Get(res.State)); n != steps {
							b.Fatalf("%d results, want %d", n, steps)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
				})
			}
		}
	}
}
