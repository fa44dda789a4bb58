package planexec_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// callSaver is an in-memory saver that stores batches, as the SQL savers
// do, and counts the calls made in the steps' namespaces.
type callSaver struct {
	*checkpoint.Memory
	mu                           sync.Mutex
	gets, puts, batches, pending int
}

func newCallSaver() *callSaver { return &callSaver{Memory: checkpoint.NewMemory()} }

func (c *callSaver) count(ns string, n *int) {
	if strings.HasPrefix(ns, planexec.StepNode+":") {
		c.mu.Lock()
		*n++
		c.mu.Unlock()
	}
}

func (c *callSaver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if ref.ID == "" {
		c.count(ref.Namespace, &c.gets)
	}
	return c.Memory.Get(ctx, ref)
}

func (c *callSaver) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	c.count(ref.Namespace, &c.puts)
	return c.Memory.Put(ctx, ref, cp, md)
}

func (c *callSaver) PutBatch(ctx context.Context, ref checkpoint.Ref, es []checkpoint.Entry) (checkpoint.Ref, error) {
	c.count(ref.Namespace, &c.batches)
	return c.Memory.PutBatch(ctx, ref, es)
}

func (c *callSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, task string, ws []checkpoint.PendingWrite) error {
	c.count(ref.Namespace, &c.pending)
	return c.Memory.PutWrites(ctx, ref, task, ws)
}

// A step whose loop answers in one model turn costs its namespace one
// write — its input's checkpoint and its model step's in one batch — and
// no read: the namespace is new, so there is no latest checkpoint to read.
// Before, each step read its namespace once and wrote two checkpoints.
// The step's transcript is still there: its prompt and its answer.
func TestStepSavesAndReads(t *testing.T) {
	g := mustNew(t, planexec.Config{Model: replies20(t), PlanMode: true})
	s := newCallSaver()
	res, err := g.Invoke(context.Background(), planexec.Input("go"), thread(s, "saves")...)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(planexec.Steps.Get(res.State)); n != 20 {
		t.Fatalf("%d steps finished; want 20", n)
	}
	got := map[string]int{"reads": s.gets, "puts": s.puts, "batches": s.batches, "pending writes": s.pending}
	want := map[string]int{"reads": 0, "puts": 0, "batches": 20, "pending writes": 0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("saver calls in the 20 steps' namespaces (-want +got):\n%s", d)
	}
	ns, err := s.Namespaces(context.Background(), "saves")
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, n := range ns {
		if !strings.HasPrefix(n, planexec.StepNode+":") {
			continue
		}
		steps++
		var sources []string
		var text []string
		for tup, err := range s.List(context.Background(), checkpoint.Ref{ThreadID: "saves", Namespace: n}, checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			sources = append(sources, string(tup.Metadata.Source))
			for _, b := range tup.Checkpoint.Blobs {
				text = append(text, string(b.Data))
			}
		}
		if !slices.Equal(sources, []string{"loop", "input"}) {
			t.Errorf("namespace %s holds checkpoints %v; want input, then loop", n, sources)
		}
		if all := strings.Join(text, ""); !strings.Contains(all, "step done") || !strings.Contains(all, "Do it.") {
			t.Errorf("namespace %s lacks the step's prompt or answer: %s", n, all)
		}
	}
	if steps != 20 {
		t.Errorf("%d step namespaces; want 20", steps)
	}
}

// TestApprovalInsideStepResumesElsewhere on a saver that stores batches,
// where a step's input checkpoint is held for its first model turn's: the
// approval inside the step still stops the run and resumes in a fresh
// instance, the finished parallel step does not run again, neither does
// the approved call's model turn, and the lookup done before the stop is
// not repeated.
func TestApprovalInsideStepWithBatches(t *testing.T) {
	var c counter
	m := executing(simplePlan(st("a", "Draft"), st("b", "Check")))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("publish", `{"q":"post"}`)), llmtest.Text("published"))
	m.When(inStep("b"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"facts"}`)), llmtest.Text("checked"))
	cfg := planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{lookup(&c), publish(&c)}}
	s := newCallSaver()
	opts := thread(s, "approval")

	res, err := mustNew(t, cfg).Invoke(context.Background(), planexec.Input("go"), opts...)
	if req, ok := tool.ApprovalFrom(interrupted(t, res, err)); !ok || req.Tool != "publish" {
		t.Fatalf("interrupt = %+v", req)
	}
	res, err = mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	if c.get("publish:post") != 1 || c.get("lookup:facts") != 1 {
		t.Errorf("publish ran %d times, lookup %d; want 1 and 1", c.get("publish:post"), c.get("lookup:facts"))
	}
	if a, b := len(requestsFrom(m, inStep("a"))), len(requestsFrom(m, inStep("b"))); a != 2 || b != 2 {
		t.Errorf("model requests: step a %d, step b %d; want 2 each", a, b)
	}
	want := map[string]planexec.StepStatus{"a": planexec.StepDone, "b": planexec.StepDone}
	if d := cmp.Diff(want, stepStatuses(res.State)); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	if s.gets == 0 {
		t.Error("the resumed steps read nothing from their namespaces; they must (they resume inside their loops)")
	}
}
