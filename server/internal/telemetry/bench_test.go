package telemetry

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/trellis-agents/trellis/graph"
)

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkObserver is the Invoke of a three-node graph with no observer,
// with the service's observer and no tracer (metrics only: the default),
// and with spans made and batched to an exporter that drops them.
func BenchmarkObserver(b *testing.B) {
	log := graph.NewKey("log", graph.Concat[string]())
	bld := graph.New(log)
	for _, n := range []string{"a", "b", "c"} {
		bld.AddNode(n, func(ctx context.Context, s graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(log, n)), nil
		})
	}
	bld.SetEntry("a")
	bld.AddEdge("a", "b")
	bld.AddEdge("b", "c")
	bld.AddEdge("c", graph.END)
	g, err := bld.Compile()
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	for _, c := range []struct {
		name string
		opts []graph.RunOption
	}{
		{"none", nil},
		{"metrics", New(Config{}).graphOptions(context.Background(), "g")},
		{"tracing", New(Config{TracerProvider: tp}).graphOptions(context.Background(), "g")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Invoke(context.Background(), nil, c.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
