package repeat

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestEveryStopsWhenFnSaysSo(t *testing.T) {
	var calls atomic.Int32
	done := make(chan struct{})
	stop := Every(time.Millisecond, func() bool {
		if calls.Add(1) == 3 {
			close(done)
			return false
		}
		return true
	})
	defer stop()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("fn was called %d times in 5 s, want 3", calls.Load())
	}
	time.Sleep(20 * time.Millisecond)
	if n := calls.Load(); n != 3 {
		t.Fatalf("fn was called %d times after it returned false on the 3rd, want 3", n)
	}
}

func TestEveryStopWaitsForACallAndEndsIt(t *testing.T) {
	var calls, running atomic.Int32
	entered := make(chan struct{}, 1)
	stop := Every(time.Millisecond, func() bool {
		running.Add(1)
		calls.Add(1)
		select {
		case entered <- struct{}{}:
		default:
		}
		time.Sleep(10 * time.Millisecond)
		running.Add(-1)
		return true
	})
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("fn was never called")
	}
	stop()
	if running.Load() != 0 {
		t.Fatal("stop returned while a call was in progress")
	}
	n := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != n {
		t.Fatalf("fn was called %d more times after stop returned", calls.Load()-n)
	}
}
