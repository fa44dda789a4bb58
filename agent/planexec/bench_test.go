package planexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/postgres"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
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
var twentyStepList = func() []planexec.Step {
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
	return steps
}()

var twentySteps = llmtest.JSON(map[string]any{"complexity": "simple", "task": "twenty steps", "steps": twentyStepList})

func scripted20() *llmtest.Model {
	m := llmtest.New()
	m.When(llmtest.Node(planexec.IntentNode), isTask).Repeat()
	m.When(llmtest.Node(planexec.PlanNode), twentySteps).Repeat()
	m.When(llmtest.Node(react.ModelNode), llmtest.Text("step done")).Repeat()
	m.When(llmtest.Node(planexec.DeliverNode), llmtest.Text("all done")).Repeat()
	return m
}

// replyModel is a scripted model that costs next to nothing: one fixed
// reply per node, no matching rules and no record of the requests (which
// llmtest.Model keeps, copying every request). BenchmarkPlanExec20Framework
// uses it to measure the framework alone.
type replyModel struct {
	byNode map[string]llm.Message // the reply's parts; the ID is new each time
}

func (m *replyModel) Name() string { return "reply-model" }

func (m *replyModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	node := graph.NodeName(ctx)
	r, ok := m.byNode[node]
	if !ok {
		return nil, fmt.Errorf("replyModel: no reply for node %q", node)
	}
	r.ID = llm.NewID()
	return &llm.Response{Message: r, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}, FinishReason: llm.FinishStop, Model: "reply-model"}, nil
}

func (m *replyModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		yield(llm.Chunk{Text: resp.Message.Text(), Usage: &resp.Usage, FinishReason: resp.FinishReason, Model: resp.Model}, nil)
	}
}

// replies20 is scripted20's replies for replyModel.
func replies20(b testing.TB) *replyModel {
	text := func(s string) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text(s)}}
	}
	plan, err := json.Marshal(map[string]any{"complexity": "simple", "task": "twenty steps", "steps": twentyStepList})
	if err != nil {
		b.Fatal(err)
	}
	return &replyModel{byNode: map[string]llm.Message{
		planexec.IntentNode:  text(`{"intent":"task"}`),
		planexec.PlanNode:    text(string(plan)),
		react.ModelNode:      text("step done"),
		planexec.DeliverNode: text("all done"),
	}}
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
	benchPlanExec20(b, planexec.Config{Model: sm, PlanMode: true}, func() { sm.cur.Store(scripted20()) })
}

// BenchmarkPlanExec20Framework is BenchmarkPlanExec20 with replyModel, a
// scripted model that neither matches rules nor records requests: what is
// left is the framework's own time.
func BenchmarkPlanExec20Framework(b *testing.B) {
	benchPlanExec20(b, planexec.Config{Model: replies20(b), PlanMode: true}, func() {})
}

// BenchmarkPlanExec20FrameworkInline is BenchmarkPlanExec20Framework with
// Config.InlineSteps: each toolless step is one model call in its task,
// with no nested run and nothing saved in its namespace.
func BenchmarkPlanExec20FrameworkInline(b *testing.B) {
	m := replies20(b)
	m.byNode[planexec.StepNode] = m.byNode[react.ModelNode] // the inline step's call runs in node "step"
	benchPlanExec20(b, planexec.Config{Model: m, PlanMode: true, InlineSteps: true}, func() {})
}

func benchPlanExec20(b *testing.B, cfg planexec.Config, fresh func()) {
	g, err := planexec.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run := func(saver checkpoint.Saver, thread string) {
		fresh()
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

// BenchmarkStepShape20 is the engine's part of BenchmarkPlanExec20Framework
// alone: the same 20 steps in 4 levels of 5, each a Send task from a
// dispatch node that invokes a compiled one-node loop in its namespace
// with a step prompt of the same size as input, and writes a StepResult
// into planexec.Steps, on the in-memory checkpointer. No planexec code
// runs: this is the floor a step as a nested durable run costs today.
func BenchmarkStepShape20(b *testing.B) {
	benchStepShape20(b, func() checkpoint.Saver { return checkpoint.NewMemory() })
}

func benchStepShape20(b *testing.B, saver func() checkpoint.Saver) { benchShape20(b, saver, true) }

// BenchmarkSendShape20 is BenchmarkStepShape20 without the nested run:
// each step's task writes its StepResult at once. It is the engine's
// floor for a plan step that is a task of its own with its result saved
// (a Send task, its pending writes, the checkpoint of its level), below
// which no step that stays a resumable, visible task can go.
func BenchmarkSendShape20(b *testing.B) {
	benchShape20(b, func() checkpoint.Saver { return checkpoint.NewMemory() }, false)
}

// BenchmarkStepShape20SQLite is BenchmarkStepShape20 on the SQLite
// checkpointer (a file in a temporary directory, one thread per
// iteration): what a step's saves and reads cost when each is a
// statement or a transaction.
func BenchmarkStepShape20SQLite(b *testing.B) {
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "cp.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchStepShape20(b, func() checkpoint.Saver { return s })
}

// BenchmarkStepShape20Postgres is BenchmarkStepShape20 on the PostgreSQL
// checkpointer named by TRELLIS_TEST_PG_DSN (skipped without it), in a
// schema of its own.
func BenchmarkStepShape20Postgres(b *testing.B) {
	dsn := os.Getenv("TRELLIS_TEST_PG_DSN")
	if dsn == "" {
		b.Skip("TRELLIS_TEST_PG_DSN is not set")
	}
	s, err := postgres.Open(context.Background(), dsn, postgres.WithSchema("bench_step_shape"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	run := fmt.Sprintf("%d-", time.Now().UnixNano()) // threads of earlier runs stay apart
	benchStepShape20(b, func() checkpoint.Saver { return prefixed{s, run} })
}

// prefixed gives a saver's thread IDs a prefix (see BenchmarkStepShape20Postgres).
type prefixed struct {
	checkpoint.Saver
	prefix string
}

func (p prefixed) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	ref.ThreadID = p.prefix + ref.ThreadID
	return p.Saver.Get(ctx, ref)
}

func (p prefixed) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	ref.ThreadID = p.prefix + ref.ThreadID
	return p.Saver.Put(ctx, ref, cp, md)
}

func (p prefixed) PutBatch(ctx context.Context, ref checkpoint.Ref, es []checkpoint.Entry) (checkpoint.Ref, error) {
	ref.ThreadID = p.prefix + ref.ThreadID
	return p.Saver.(checkpoint.BatchPutter).PutBatch(ctx, ref, es)
}

func (p prefixed) PutWrites(ctx context.Context, ref checkpoint.Ref, task string, ws []checkpoint.PendingWrite) error {
	ref.ThreadID = p.prefix + ref.ThreadID
	return p.Saver.PutWrites(ctx, ref, task, ws)
}

// benchShape20 runs 20 steps in 4 levels of 5, each a Send task that
// invokes a one-node loop in its namespace first when nested is set.
func benchShape20(b *testing.B, saver func() checkpoint.Saver, nested bool) {
	inner := graph.New(react.Messages)
	inner.AddNode(react.ModelNode, func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(react.Messages, llm.Assistant("step done"))), nil
	})
	inner.SetEntry(react.ModelNode)
	inner.AddEdge(react.ModelNode, graph.END)
	loop, err := inner.Compile()
	if err != nil {
		b.Fatal(err)
	}
	prompt := strings.Repeat("p", 560) // a step prompt of the planexec benchmark is about this long
	type task struct {
		ID string `json:"id"`
	}
	outer := graph.New(planexec.Steps, planexec.Rounds, planexec.Tokens)
	outer.AddNode(planexec.DispatchNode, func(ctx context.Context, s graph.State) (graph.Output, error) {
		done := len(planexec.Steps.Get(s))
		if done == 20 {
			return graph.Command{Goto: []graph.Target{graph.To(graph.END)}}, nil
		}
		targets := make([]graph.Target, 5)
		for col := range 5 {
			targets[col] = graph.Send(planexec.StepNode, task{ID: fmt.Sprintf("s%d%d", done/5, col)})
		}
		return graph.Command{Goto: targets}, nil
	}, graph.Destinations(planexec.StepNode, graph.END))
	graph.AddSendNode(outer, planexec.StepNode, func(ctx context.Context, s graph.State, t task) (graph.Output, error) {
		answer := "step done"
		if nested {
			res, err := loop.Invoke(ctx, graph.Writes(graph.Append(react.Messages, llm.User(prompt))))
			if err != nil {
				return nil, err
			}
			answer, _ = react.AnswerFrom(react.Messages.Get(res.State))
		}
		r := planexec.StepResult{Status: planexec.StepDone, Result: answer, Requests: 1, Tokens: 110}
		return graph.Writes(planexec.Steps.Set(map[string]planexec.StepResult{t.ID: r}), planexec.Rounds.Set(1), planexec.Tokens.Set(110)), nil
	})
	outer.SetEntry(planexec.DispatchNode)
	outer.AddEdge(planexec.StepNode, planexec.DispatchNode)
	g, err := outer.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		res, err := g.Invoke(ctx, graph.Update{}, graph.WithCheckpointer(saver()), graph.WithThread(fmt.Sprint("shape-", i)))
		if err != nil {
			b.Fatal(err)
		}
		if n := len(planexec.Steps.Get(res.State)); n != 20 {
			b.Fatalf("%d steps finished; want 20", n)
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20, "ns/step")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/20, "cpu-ns/step")
}
