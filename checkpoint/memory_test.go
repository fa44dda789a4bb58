package checkpoint_test

import (
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/checkpointtest"
)

func TestMemory(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return checkpoint.NewMemory() })
}

// TestMemoryShared runs the suite against one Saver shared by every subtest,
// as a database backend would be.
func TestMemoryShared(t *testing.T) {
	s := checkpoint.NewMemory()
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return s })
}
