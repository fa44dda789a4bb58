package scheduler

import (
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// Asked to book a meeting, the scripted scheduler says what it can
// demonstrate instead of showing its study-slot form.
func TestScriptSaysWhatItCanDemonstrate(t *testing.T) {
	ctx := t.Context()
	g, err := NewGraph(Script(), openStore(t), testScope, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(ctx, planexec.Input("Book a meeting with Anna on Tuesday at 10"), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	if err != nil || len(res.Interrupts) != 0 {
		t.Fatalf("err %v, interrupts %d; want an answer", err, len(res.Interrupts))
	}
	if a, _ := planexec.Answer(res.State); a != Scope {
		t.Errorf("answer %q", a)
	}
}
