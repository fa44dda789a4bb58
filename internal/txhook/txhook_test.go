package txhook

import (
	"context"
	"errors"
	"testing"
)

// Run calls the attached hook with the transaction and returns its error;
// without a hook it does nothing.
func TestRun(t *testing.T) {
	if err := Run(context.Background(), "tx"); err != nil {
		t.Fatalf("no hook: %v", err)
	}
	var got any
	boom := errors.New("boom")
	ctx := With(context.Background(), func(_ context.Context, tx any) error { got = tx; return boom })
	if err := Run(ctx, "tx"); !errors.Is(err, boom) || got != "tx" {
		t.Errorf("Run = %v with %v; want boom with tx", err, got)
	}
}
