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

// WithoutEnd hides ctx's end hooks from a call made with it; the original
// ctx still runs them, and a hook added on top of it runs alone.
func TestWithoutEnd(t *testing.T) {
	var calls []string
	ctx := WithEnd(context.Background(), func(context.Context, any) error {
		calls = append(calls, "held")
		return nil
	})
	held := WithoutEnd(ctx)
	if err := RunEnd(held, "tx"); err != nil || len(calls) != 0 {
		t.Fatalf("RunEnd without the end hooks = %v, calls %v; want nil and no call", err, calls)
	}
	if err := RunEnd(WithEnd(held, func(context.Context, any) error {
		calls = append(calls, "added")
		return nil
	}), "tx"); err != nil {
		t.Fatal(err)
	}
	if err := RunEnd(ctx, "tx"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(calls); got != "[added held]" {
		t.Errorf("calls = %s; want the hook added after WithoutEnd alone, then the held one from ctx", got)
	}
}

// Fenced holds only for the transaction and the lease (tenant, run and
// token) WithFenced named; a transaction of a type that cannot be
// compared is never fenced, and comparing it does not panic.
func TestFenced(t *testing.T) {
	tx, other := new(int), new(int)
	ctx := WithFenced(context.Background(), tx, "t", "r", 3)
	if !Fenced(ctx, tx, "t", "r", 3) {
		t.Fatal("the fenced lease in its transaction is not reported fenced")
	}
	for name, ok := range map[string]bool{
		"no mark":           Fenced(context.Background(), tx, "t", "r", 3),
		"other transaction": Fenced(ctx, other, "t", "r", 3),
		"nil transaction":   Fenced(ctx, nil, "t", "r", 3),
		"other tenant":      Fenced(ctx, tx, "u", "r", 3),
		"other run":         Fenced(ctx, tx, "t", "s", 3),
		"other token":       Fenced(ctx, tx, "t", "r", 4),
		"other type":        Fenced(ctx, "tx", "t", "r", 3),
	} {
		if ok {
			t.Errorf("%s: reported fenced", name)
		}
	}
	slice := []int{1}
	if Fenced(WithFenced(context.Background(), slice, "t", "r", 3), slice, "t", "r", 3) {
		t.Error("an uncomparable transaction is reported fenced")
	}
}
