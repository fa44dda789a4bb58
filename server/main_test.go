package server

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(envCrashChild) != "" {
		os.Exit(crashChild()) // the serving process the crash test kills
	}
	goleak.VerifyTestMain(m)
}
