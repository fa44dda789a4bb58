package guide_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no example leaves a goroutine running (a saver not
// closed, an MCP session left open).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
