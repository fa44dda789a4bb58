package planexec_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// TestStepAllocations bounds the allocations of a plan step: the task of
// BenchmarkPlanExec20Framework (20 steps in 4 levels of 5, a model that
// answers from a fixed reply per node, the in-memory checkpointer), whole
// task ÷ 20. Most of them are the engine's (BenchmarkStepShape20 makes
// about 77 a step with no planexec code); the bound catches the agent's
// own share growing back. 134.5: a step's nested run reads no head and
// forwards events without a closure (133.5; 135.5 before). 119.5: the
// step's frame, loop options, plan check and model reply allocate less
// (117.6; 129.1 before).
func TestStepAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("counts allocations (not under -short or the race detector)")
	}
	perStep := stepAllocations(t, planexec.Config{Model: replies20(t), PlanMode: true})
	if perStep > 119.5 {
		t.Errorf("a plan step allocates %.1f times, want at most 119.5 (the step's node, prompt, events and result; see docs/architecture.md)", perStep)
	}
}

// TestInlineStepAllocations bounds the allocations of a toolless plan
// step with Config.InlineSteps (BenchmarkPlanExec20FrameworkInline's
// task ÷ 20): 82, from 80.3 (a step run as a nested loop makes 118).
func TestInlineStepAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("counts allocations (not under -short or the race detector)")
	}
	m := replies20(t)
	m.byNode[planexec.StepNode] = m.byNode[react.ModelNode]
	perStep := stepAllocations(t, planexec.Config{Model: m, PlanMode: true, InlineSteps: true})
	if perStep > 82 {
		t.Errorf("an inline plan step allocates %.1f times, want at most 82 (see docs/architecture.md)", perStep)
	}
}

// stepAllocations is the allocations of cfg's 20-step task, ÷ 20.
func stepAllocations(t *testing.T, cfg planexec.Config) float64 {
	g, err := planexec.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	i := 0
	perStep := testing.AllocsPerRun(10, func() {
		i++
		res, err := g.Invoke(ctx, planexec.Input("go"), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread(fmt.Sprint("t", i)))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(planexec.Steps.Get(res.State)); n != 20 {
			t.Fatalf("%d steps finished; want 20", n)
		}
	}) / 20
	t.Logf("allocations per step: %.1f", perStep)
	return perStep
}
