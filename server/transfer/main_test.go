package transfer

import (
	"testing"

	"go.uber.org/goleak"
)

// Run starts worker goroutines; none may outlive it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
