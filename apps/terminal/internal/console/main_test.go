package console

import (
	"testing"

	"go.uber.org/goleak"
)

// The prompter starts a reader goroutine; every session must end it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
