package checkpoint_test

import (
	"errors"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/checkpointtest"
)

// corruptible is a Memory the suite can damage (checkpointtest.Corrupter).
type corruptible struct{ *checkpoint.Memory }

func (c corruptible) Corrupt(ref checkpoint.Ref, d checkpointtest.Damage) error {
	err := checkpoint.CorruptMemory(c.Memory, ref, string(d.Kind), d.Key, d.Version, d.TaskID)
	if errors.Is(err, checkpoint.ErrDamageNotApplicable) {
		return checkpointtest.ErrNotApplicable
	}
	return err
}

func TestMemory(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return corruptible{checkpoint.NewMemory()} })
}

// TestMemoryShared runs the suite against one Saver shared by every subtest,
// as a database backend would be.
func TestMemoryShared(t *testing.T) {
	s := corruptible{checkpoint.NewMemory()}
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return s })
}

func TestMemoryLimits(t *testing.T) {
	checkpointtest.RunLimits(t, func(t *testing.T, maxBytes int) checkpoint.Saver {
		return checkpoint.NewMemory(checkpoint.MemoryMaxBytes(maxBytes))
	})
}
