package planexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// countingSaver counts the bytes a thread stores: blobs and metadata of
// checkpoints, and pending writes, in every namespace (step loops
// included).
type countingSaver struct {
	checkpoint.Saver
	bytes atomic.Int64
}

func (c *countingSaver) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	n := 0
	for _, b := range cp.Blobs {
		n += len(b.Data)
	}
	if m, err := json.Marshal(md); err == nil {
		n += len(m)
	}
	c.bytes.Add(int64(n))
	return c.Saver.Put(ctx, ref, cp, md)
}

func (c *countingSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	n := 0
	for _, w := range writes {
		n += len(w.Value)
	}
	c.bytes.Add(int64(n))
	return c.Saver.PutWrites(ctx, ref, taskID, writes)
}

// swapModel lets each benchmark iteration use a fresh scripted model (a
// scripted model keeps every request it receives).
type swapModel struct{ cur atomic.Pointer[llmtest.Model] }

func (s *swapModel) Name() string { return llmtest.DefaultName }
func (s *swapModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return s.cur.Load().Generate(ctx, req)
}
func (s *swapModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return s.cur.Load().Stream(ctx, req)
}

// twentySteps is a plan of 4 levels of 5 parallel steps; each step
// depends on the step in the same column of the level before.
var twentySteps = func() llmtest.Turn {
	var steps []planexec.Step
	for level := range 4 {
		for col := range 5 {
			s := planexec.Step{ID: fmt.Sprintf("s%d%d", level, col), Title: fmt.Sprintf("Step %d.%d", level, col), Description: "Do it."}
			if level > 0 {
				s.DependsOn = []string{fmt.Sprintf("s%d%d", level-1, col)}
			}
			steps = append(steps, s)
		}
	}
	return llmtest.JSON(map[string]any{"complexity": "simple", "task": "twenty steps", "steps": steps})
}()

func scripted20() *llmtest.Model {
	m := llmtest.New()
	m.When(llmtest.Node(planexec.IntentNode), isTask).Repeat()
	m.When(llmtest.Node(planexec.PlanNode), twentySteps).Repeat()
	m.When(llmtest.Node(react.ModelNode), llmtest.Text("step done")).Repeat()
	m.When(llmtest.Node(planexec.DeliverNode), llmtest.Text("all done")).Repeat()
	return m
}

// BenchmarkPlanExec20 runs a 20-step plan in 4 parallel levels of 5 (each
// step one model reply, no tools), without plan confirmation, on the
// in-memory checkpointer: the framework's time per step (the scripted
// model answers at once), allocations, and the bytes one thread stores.
// cpu-ns/step is the process's CPU time per step (getrusage), which moves
// far less than ns/step on a shared machine.
func BenchmarkPlanExec20(b *testing.B) {
	sm := &swapModel{}
	sm.cur.Store(scripted20())
	g, err := planexec.New(planexec.Config{Model: sm, PlanMode: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run := func(saver checkpoint.Saver, thread string) {
		sm.cur.Store(scripted20())
		res, err := g.Invoke(ctx, planexec.Input("go"), graph.WithCheckpointer(saver), graph.WithThread(thread))
		if err != nil {
			b.Fatal(err)
		}
		if n := len(planexec.Steps.Get(res.State)); n != 20 {
			b.Fatalf("%d steps finished; want 20", n)
		}
	}
	// The bytes a thread stores, measured once, outside the timed loop.
	counted := &countingSaver{Saver: checkpoint.NewMemory()}
	run(counted, "counted")
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		run(checkpoint.NewMemory(), fmt.Sprint("bench-", i))
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20, "ns/step")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/20, "cpu-ns/step")
	b.ReportMetric(float64(counted.bytes.Load()), "checkpoint-B/thread")
}
