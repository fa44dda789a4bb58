package txhook

import (
	"context"
	"errors"
	"fmt"
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

// End hooks chain in the order they were added, stop at the first error,
// and see what the transaction ended.
func TestEndChain(t *testing.T) {
	var calls []string
	boom := errors.New("boom")
	ctx := WithEnd(context.Background(), func(ctx context.Context, tx any) error {
		calls = append(calls, "first:"+tx.(string)+":"+Ended(ctx).(string))
		return nil
	})
	ctx = WithEnd(ctx, func(ctx context.Context, tx any) error {
		calls = append(calls, "second:"+tx.(string)+":"+Ended(ctx).(string))
		return boom
	})
	ctx = WithEnd(ctx, func(context.Context, any) error {
		calls = append(calls, "third")
		return nil
	})
	if err := RunEndOf(ctx, "tx", "run"); !errors.Is(err, boom) {
		t.Fatalf("RunEndOf = %v; want boom", err)
	}
	if got := fmt.Sprint(calls); got != "[first:tx:run second:tx:run]" {
		t.Errorf("calls = %s; want first then second, each with tx and run", got)
	}
	if Ended(context.Background()) != nil {
		t.Error("Ended outside an end hook is not nil")
	}
}
