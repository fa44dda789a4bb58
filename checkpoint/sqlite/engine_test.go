package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph/graphtest"
)

// TestEngine runs the engine's durable-thread cases on SQLite in every
// durability mode.
func TestEngine(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "engine.db"))
	graphtest.Run(t, func(*testing.T) checkpoint.Saver { return s })
}
