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
	if os.Getenv(envHopChild) != "" {
		os.Exit(hopChild()) // the local server of the remote hop's crash test
	}
	if os.Getenv(envExpKillChild) != "" {
		os.Exit(expKillChild()) // a replica the experiment kill test kills
	}
	goleak.VerifyTestMain(m)
}
