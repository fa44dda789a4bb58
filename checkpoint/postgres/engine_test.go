package postgres_test

import (
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph/graphtest"
)

// TestEngine runs the engine's durable-thread cases on PostgreSQL in every
// durability mode.
func TestEngine(t *testing.T) {
	s := newSaver(t)
	graphtest.Run(t, func(*testing.T) checkpoint.Saver { return s })
}
