package store_test

import (
	"testing"

	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}

// TestMemoryShared runs the suite against one Store shared by every
// subtest, as a database backend would be.
func TestMemoryShared(t *testing.T) {
	s := store.NewMemory()
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}

func TestMemoryLimits(t *testing.T) {
	storetest.RunLimits(t, func(t *testing.T, maxBytes int) store.Store {
		return store.NewMemory(store.MemoryMaxValueBytes(maxBytes))
	})
}

func TestMemoryIndex(t *testing.T) {
	storetest.RunIndex(t, func(t *testing.T, cfg store.IndexConfig) store.Store {
		return store.NewMemory(store.MemoryIndex(cfg))
	})
}
