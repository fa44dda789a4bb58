package planexec

import (
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

type limitedModel struct {
	*llmtest.Model
	l llm.Limits
}

func (m limitedModel) Limits() llm.Limits { return m.l }

// The step loop's model keeps the configured model's raised limits: the
// packs and budgets are middleware, not wrappers of the model.
func TestStepLoopModelKeepsLimits(t *testing.T) {
	raised := llm.Limits{TextBytes: 64 << 20}
	s := &settings{Config: Config{Model: limitedModel{Model: llmtest.New(), l: raised}, Packs: map[string][]tool.Tool{"p": nil}}}
	a := &agent{settings: s, packs: newPackSet(s.Packs, nil)}
	got := llm.LimitsOf(a.loopConfig("", "step", true).Model)
	if got.TextBytes != 64<<20 {
		t.Errorf("text limit %d, want the wrapped model's %d", got.TextBytes, 64<<20)
	}
}
