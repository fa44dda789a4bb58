package graph_test

import (
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph/graphtest"
)

// TestEngineOnMemory runs the durable-thread cases every saver backend runs.
func TestEngineOnMemory(t *testing.T) {
	graphtest.Run(t, func(*testing.T) checkpoint.Saver { return checkpoint.NewMemory() })
}
