package planexec

import (
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

type limitedModel struct {
	*llmtest.Model
	l llm.Limits
}

func (m limitedModel) Limits() llm.Limits { return m.l }

// The pack wrapper keeps the wrapped model's raised limits.
func TestPackModelForwardsLimits(t *testing.T) {
	raised := llm.Limits{TextBytes: 64 << 20}
	got := llm.LimitsOf(packModel{Model: limitedModel{Model: llmtest.New(), l: raised}})
	if got.TextBytes != 64<<20 {
		t.Errorf("text limit %d, want the wrapped model's %d", got.TextBytes, 64<<20)
	}
}
