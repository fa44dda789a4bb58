package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// Each shape is benchmarked with no saver (the engine alone) and with the
// in-memory saver (engine plus checkpoint encoding). Per-node figures are
// ns/op divided by the nodes executed; ReportMetric adds them as ns/node.

var count = graph.NewKey("count", graph.Sum[int]())

func incr(context.Context, graph.State) (graph.Output, error) {
	return graph.Writes(count.Set(1)), nil
}

// addIncr is incr writing through graph.AddWrites: one allocation where
// incr's graph.Writes makes two.
func addIncr(ctx context.Context, _ graph.State) (graph.Output, error) {
	return nil, graph.AddWrites(ctx, count.Set(1))
}

func chain(n int) *graph.Graph { return chainOf(n, incr) }

func chainOf(n int, node graph.NodeFunc) *graph.Graph {
	b := graph.New(count)
	prev := graph.START
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		b.AddNode(name, node)
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	g, err := b.Compile(graph.WithStepLimit(n + 1))
	if err != nil {
		panic(err)
	}
	return g
}

func fanout(n int) *graph.Graph { return fanoutOf(n, incr) }

func fanoutOf(n int, node graph.NodeFunc) *graph.Graph {
	b := graph.New(count)
	b.AddNode("source", incr)
	b.SetEntry("source")
	from := make([]string, n)
	for i := range n {
		from[i] = fmt.Sprintf("w%d", i)
		b.AddNode(from[i], node)
		b.AddEdge("source", from[i])
	}
	b.AddNode("join", incr)
	b.AddJoin("join", from...)
	b.AddEdge("join", graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	return g
}

var (
	items   = graph.NewKey[[]int]("items")
	results = graph.NewKey("results", graph.Concat[int]())
)

func mapReduce() *graph.Graph {
	b := graph.New(items, results, count)
	b.AddNode("split", func(context.Context, graph.State) (graph.Output, error) { return nil, nil })
	b.AddFanout("split", func(_ context.Context, s graph.State) ([]graph.Target, error) {
		its := items.Get(s)
		ts := make([]graph.Target, len(its))
		for i, it := range its {
			ts[i] = graph.Send("work", it)
		}
		return ts, nil
	}, "work")
	graph.AddSendNode(b, "work", func(_ context.Context, _ graph.State, it int) (graph.Output, error) {
		return graph.Writes(graph.Append(results, it*2)), nil
	})
	b.AddNode("reduce", incr)
	b.SetEntry("split")
	b.AddEdge("work", "reduce")
	b.AddEdge("reduce", graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	return g
}

var wideKeys = func() []*graph.Key[int] {
	ks := make([]*graph.Key[int], 100)
	for i := range ks {
		ks[i] = graph.NewKey[int](fmt.Sprintf("k%03d", i))
	}
	return ks
}()

// wide is a chain of 10 nodes over a 100-key state; each node writes 10 keys.
func wide() *graph.Graph {
	keys := make([]graph.AnyKey, len(wideKeys))
	for i, k := range wideKeys {
		keys[i] = k
	}
	b := graph.New(keys...)
	prev := graph.START
	for i := range 10 {
		name := fmt.Sprintf("n%d", i)
		b.AddNode(name, func(_ context.Context, s graph.State) (graph.Output, error) {
			ws := make(graph.Update, 10)
			for j := range ws {
				k := wideKeys[i*10+j]
				ws[j] = k.Set(k.Get(s) + 1)
			}
			return ws, nil
		})
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	return g
}

type chatMsg struct {
	MsgID, Role, Text string
}

func (m chatMsg) ID() string { return m.MsgID }

var (
	history = graph.NewKey("history", graph.MergeByID[chatMsg]())
	turn    = graph.NewKey("turn", graph.Sum[int]())
)

// agentLoop is a model node and a tool node in a loop; the fake model asks
// for a tool 9 times, then answers: 10 rounds, 19 steps.
func agentLoop() *graph.Graph {
	b := graph.New(history, turn)
	b.AddNode("model", func(_ context.Context, s graph.State) (graph.Output, error) {
		n := turn.Get(s)
		text := "call tool"
		if n == 9 {
			text = "final answer"
		}
		return graph.Writes(graph.Append(history, chatMsg{fmt.Sprint("m", n), "assistant", text}), turn.Set(1)), nil
	})
	b.AddNode("tools", func(_ context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(history, chatMsg{fmt.Sprint("t", turn.Get(s)), "tool", "result"})), nil
	})
	b.SetEntry("model")
	b.AddConditionalEdges("model", func(_ context.Context, s graph.State) (string, error) {
		if turn.Get(s) >= 10 {
			return "done", nil
		}
		return "tools", nil
	}, map[string]string{"tools": "tools", "done": graph.END})
	b.AddEdge("tools", "model")
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	return g
}

type shape struct {
	name  string
	g     *graph.Graph
	input graph.Update
	nodes int // node executions per run
	check func(graph.State) error
}

func counted(want int) func(graph.State) error {
	return func(s graph.State) error {
		if got := count.Get(s); got != want {
			return fmt.Errorf("count = %d, want %d", got, want)
		}
		return nil
	}
}

func run(b *testing.B, sh shape, saver bool) {
	ctx := context.Background()
	var opts []graph.RunOption
	var mem *checkpoint.Memory
	i := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if saver {
			if i%1000 == 0 { // a fresh saver now and then keeps memory flat
				b.StopTimer()
				mem = checkpoint.NewMemory()
				b.StartTimer()
			}
			i++
			opts = []graph.RunOption{graph.WithCheckpointer(mem), graph.WithThread(fmt.Sprint("t", i))}
		}
		res, err := sh.g.Invoke(ctx, sh.input, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if err := sh.check(res.State); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(sh.nodes), "ns/node")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(sh.nodes), "cpu-ns/node")
}

func chainShape(n int) shape {
	return shape{fmt.Sprint("Chain", n), chain(n), nil, n, counted(n)}
}

func BenchmarkChain3(b *testing.B)         { run(b, chainShape(3), false) }
func BenchmarkChain3Saver(b *testing.B)    { run(b, chainShape(3), true) }
func BenchmarkChain10(b *testing.B)        { run(b, chainShape(10), false) }
func BenchmarkChain10Saver(b *testing.B)   { run(b, chainShape(10), true) }
func BenchmarkChain100(b *testing.B)       { run(b, chainShape(100), false) }
func BenchmarkChain100Saver(b *testing.B)  { run(b, chainShape(100), true) }
func BenchmarkChain1000(b *testing.B)      { run(b, chainShape(1000), false) }
func BenchmarkChain1000Saver(b *testing.B) { run(b, chainShape(1000), true) }

// incrOut is incr's output made once: a node that returns it allocates
// nothing, so what a run of staticChain allocates is the engine's.
var incrOut graph.Output = graph.Writes(count.Set(1))

func staticChain(n int) *graph.Graph {
	b := graph.New(count)
	prev := graph.START
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		b.AddNode(name, func(context.Context, graph.State) (graph.Output, error) { return incrOut, nil })
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	g, err := b.Compile(graph.WithStepLimit(n + 1))
	if err != nil {
		panic(err)
	}
	return g
}

// ChainStatic100 is Chain100 with nodes that allocate nothing: the engine's
// own cost per node.
func BenchmarkChainStatic100(b *testing.B) {
	run(b, shape{"ChainStatic100", staticChain(100), nil, 100, counted(100)}, false)
}

func BenchmarkChainStatic100Saver(b *testing.B) {
	run(b, shape{"ChainStatic100", staticChain(100), nil, 100, counted(100)}, true)
}

func fanoutShape() shape { return shape{"Fanout100", fanout(100), nil, 102, counted(102)} }

// ChainAdd100 and FanoutAdd100 are Chain100 and Fanout100 with nodes that
// write through graph.AddWrites (Fanout100's source and join keep incr).
func BenchmarkChainAdd100(b *testing.B) {
	run(b, shape{"ChainAdd100", chainOf(100, addIncr), nil, 100, counted(100)}, false)
}

func BenchmarkFanoutAdd100(b *testing.B) {
	run(b, shape{"FanoutAdd100", fanoutOf(100, addIncr), nil, 102, counted(102)}, false)
}

func BenchmarkFanout100(b *testing.B)      { run(b, fanoutShape(), false) }
func BenchmarkFanout100Saver(b *testing.B) { run(b, fanoutShape(), true) }

func mapReduceShape() shape {
	in := make([]int, 1000)
	for i := range in {
		in[i] = i
	}
	return shape{"SendMapReduce1000", mapReduce(), graph.Writes(items.Set(in)), 1002, func(s graph.State) error {
		if len(results.Get(s)) != 1000 || results.Get(s)[999] != 1998 {
			return fmt.Errorf("bad results")
		}
		return counted(1)(s)
	}}
}

func BenchmarkSendMapReduce1000(b *testing.B)      { run(b, mapReduceShape(), false) }
func BenchmarkSendMapReduce1000Saver(b *testing.B) { run(b, mapReduceShape(), true) }

func wideShape() shape {
	return shape{"WideState100", wide(), nil, 10, func(s graph.State) error {
		if wideKeys[99].Get(s) != 1 || wideKeys[0].Get(s) != 1 {
			return fmt.Errorf("keys not written")
		}
		return nil
	}}
}

func BenchmarkWideState100(b *testing.B)      { run(b, wideShape(), false) }
func BenchmarkWideState100Saver(b *testing.B) { run(b, wideShape(), true) }

func agentShape() shape {
	return shape{"AgentLoop10", agentLoop(), nil, 19, func(s graph.State) error {
		if h := history.Get(s); len(h) != 19 || h[18].Text != "final answer" {
			return fmt.Errorf("history has %d messages", len(h))
		}
		return nil
	}}
}

func BenchmarkAgentLoop10(b *testing.B)      { run(b, agentShape(), false) }
func BenchmarkAgentLoop10Saver(b *testing.B) { run(b, agentShape(), true) }
