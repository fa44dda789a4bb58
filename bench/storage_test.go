package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// Storage benchmarks for durable threads: what a 500-turn chat thread
// writes, and what one durable step costs. Each runs on every saver that is
// available (see savers_test.go).

// countingSaver counts the payload bytes a saver is given: blob data and
// pending-write values (not keys, IDs or metadata).
type countingSaver struct {
	checkpoint.Saver
	payload atomic.Int64
	blobs   atomic.Int64
}

func (c *countingSaver) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	for _, b := range cp.Blobs {
		c.payload.Add(int64(len(b.Data)))
		c.blobs.Add(int64(len(b.Data)))
	}
	return c.Saver.Put(ctx, ref, cp, md)
}

func (c *countingSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, taskID string, ws []checkpoint.PendingWrite) error {
	for _, w := range ws {
		c.payload.Add(int64(len(w.Value)))
	}
	return c.Saver.PutWrites(ctx, ref, taskID, ws)
}

// sizer is implemented by savers that can report their storage size.
type sizer interface {
	Size(ctx context.Context) (int64, error)
}

// chatGraph answers each user message with one assistant message.
func chatGraph() *graph.Graph {
	b := graph.New(history)
	b.AddNode("reply", func(_ context.Context, s graph.State) (graph.Output, error) {
		h := history.Get(s)
		last := h[len(h)-1]
		return graph.Writes(graph.Append(history, chatMsg{MsgID: "a" + last.MsgID[1:], Role: "assistant", Text: filler(last.MsgID)})), nil
	})
	b.SetEntry("reply")
	b.AddEdge("reply", graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	return g
}

// filler is a ~170-byte message text.
func filler(seed string) string {
	return (seed + " " + strings.Repeat("lorem ipsum dolor sit amet ", 7))[:170]
}

const turns = 500

func BenchmarkChatThread500(b *testing.B) {
	for _, sv := range savers() {
		b.Run(sv.name, func(b *testing.B) {
			ctx := context.Background()
			g := chatGraph()
			b.ReportAllocs()
			var ratio, payload, raw, size float64
			for i := 0; b.Loop(); i++ {
				saver, cleanup := sv.open(b)
				cs := &countingSaver{Saver: saver}
				opts := []graph.RunOption{graph.WithCheckpointer(cs), graph.WithThread(fmt.Sprint("chat-", i))}
				var rawBytes int64
				for turn := range turns {
					m := chatMsg{MsgID: fmt.Sprint("u", turn), Role: "user", Text: filler(fmt.Sprint("u", turn))}
					res, err := g.Invoke(ctx, graph.Writes(graph.Append(history, m)), opts...)
					if err != nil {
						b.Fatal(err)
					}
					h := history.Get(res.State)
					for _, msg := range h[len(h)-2:] {
						enc, _ := json.Marshal(msg)
						rawBytes += int64(len(enc))
					}
				}
				res, err := g.Invoke(ctx, nil, opts...) // rebuild from storage
				if err != nil || len(history.Get(res.State)) != 2*turns {
					b.Fatalf("rebuilt %d messages, err %v", len(history.Get(res.State)), err)
				}
				payload, raw = float64(cs.payload.Load()), float64(rawBytes)
				ratio = payload / raw
				if sz, ok := saver.(sizer); ok {
					n, err := sz.Size(ctx)
					if err != nil {
						b.Fatal(err)
					}
					size = float64(n)
				}
				cleanup()
			}
			b.ReportMetric(ratio, "x-raw")
			b.ReportMetric(payload, "payload-B")
			b.ReportMetric(raw, "raw-B")
			if size > 0 {
				b.ReportMetric(size, "store-B")
			}
		})
	}
}

var tenKeys = func() []*graph.Key[string] {
	ks := make([]*graph.Key[string], 10)
	for i := range ks {
		ks[i] = graph.NewKey[string](fmt.Sprintf("field%d", i))
	}
	return ks
}()

// BenchmarkDurableStep10Keys measures one durable step of a 10-key state:
// one run loops a node that writes all 10 keys, so each iteration is one
// superstep whose checkpoint is written before the next step starts (sync
// durability). ns/op is the mean per step; median-ns/step and p99-ns/step
// come from the time between consecutive steps' starts.
func BenchmarkDurableStep10Keys(b *testing.B) {
	for _, sv := range savers() {
		b.Run(sv.name, func(b *testing.B) {
			keys := make([]graph.AnyKey, len(tenKeys))
			for i, k := range tenKeys {
				keys[i] = k
			}
			gb := graph.New(keys...)
			starts := make([]time.Time, 0, b.N)
			gb.AddNode("step", func(ctx context.Context, s graph.State) (graph.Output, error) {
				starts = append(starts, time.Now()) // one full step lies between two starts
				ws := make(graph.Update, len(tenKeys))
				for i, k := range tenKeys {
					ws[i] = k.Set(fmt.Sprintf("value %d at step %d", i, graph.Step(ctx)))
				}
				return ws, nil
			})
			gb.SetEntry("step")
			gb.AddConditionalEdges("step", func(ctx context.Context, _ graph.State) (string, error) {
				if graph.RemainingSteps(ctx) > 0 {
					return "again", nil
				}
				return "done", nil
			}, map[string]string{"again": "step", "done": graph.END})
			g, err := gb.Compile()
			if err != nil {
				b.Fatal(err)
			}
			saver, cleanup := sv.open(b)
			defer cleanup()
			b.ReportAllocs()
			b.ResetTimer()
			res, err := g.Invoke(context.Background(), nil, graph.WithCheckpointer(saver), graph.WithThread("durable-step"), graph.WithStepLimit(b.N))
			if err != nil {
				b.Fatal(err)
			}
			if res.Steps != b.N {
				b.Fatalf("ran %d steps, want %d", res.Steps, b.N)
			}
			if len(starts) > 1 {
				steps := make([]time.Duration, len(starts)-1)
				for i := range steps {
					steps[i] = starts[i+1].Sub(starts[i])
				}
				slices.Sort(steps)
				b.ReportMetric(float64(steps[len(steps)/2].Nanoseconds()), "median-ns/step")
				b.ReportMetric(float64(steps[len(steps)*99/100].Nanoseconds()), "p99-ns/step")
			}
		})
	}
}
