package planexec

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/llm"
)

// plan20Reply is the planner's reply in BenchmarkPlanExec20Framework: 20
// steps in 4 levels of 5, each depending on the step above it.
func plan20Reply(tb testing.TB) string {
	var steps []Step
	for level := range 4 {
		for col := range 5 {
			s := Step{ID: fmt.Sprintf("s%d%d", level, col), Title: fmt.Sprintf("Step %d.%d", level, col), Description: "Do it."}
			if level > 0 {
				s.DependsOn = []string{fmt.Sprintf("s%d%d", level-1, col)}
			}
			steps = append(steps, s)
		}
	}
	b, err := json.Marshal(map[string]any{"complexity": "simple", "task": "twenty steps", "steps": steps})
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// BenchmarkDecodePlan20 decodes that reply into the planner's contract,
// as each plan-and-execute run does once.
func BenchmarkDecodePlan20(b *testing.B) {
	reply := plan20Reply(b)
	b.ReportAllocs()
	for b.Loop() {
		d, err := llm.Decode[draft](reply)
		if err != nil || len(d.Steps) != 20 {
			b.Fatal(len(d.Steps), err)
		}
	}
}
