package terminal

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if helperMain() {
		return
	}
	goleak.VerifyTestMain(m)
}

// An ExitError's code is the exit status; with no error nothing more is
// printed (the command has said what happened), with one it is reported.
func TestReportExitError(t *testing.T) {
	var b strings.Builder
	if code := Report(&b, "trellis", &ExitError{Code: 2, Err: errors.New("give one DATASET")}); code != 2 || !strings.Contains(b.String(), "trellis: give one DATASET") {
		t.Fatalf("code %d, printed %q", code, b.String())
	}
	b.Reset()
	if code := Report(&b, "trellis", fmt.Errorf("wrapped: %w", &ExitError{Code: 1})); code != 1 || b.String() != "" {
		t.Fatalf("silent exit 1: code %d, printed %q", code, b.String())
	}
}
