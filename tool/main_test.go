package tool_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must stop what it starts: tool tasks, HTTP fetches, servers.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
