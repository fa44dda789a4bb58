package runs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The status poll of a follow reads until the run is over, then cancels
// the follow, and reads no more.
func TestPollEndCancelsWhenOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int32
	stop := pollEnd(ctx, time.Millisecond, func(context.Context) (bool, error) {
		return calls.Add(1) >= 3, nil
	}, cancel)
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("not cancelled after %d status reads", calls.Load())
	}
	time.Sleep(20 * time.Millisecond)
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d status reads, want 3 (none after the run was over)", n)
	}
}

// Once stopped, the poll reads nothing more, and stop waits for a read in
// progress.
func TestPollEndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls, inRead atomic.Int32
	started := make(chan struct{}, 1)
	stop := pollEnd(ctx, time.Millisecond, func(c context.Context) (bool, error) {
		inRead.Add(1)
		defer inRead.Add(-1)
		calls.Add(1)
		select {
		case started <- struct{}{}:
		default:
		}
		<-c.Done() // a read that lasts until the follow ends
		return false, c.Err()
	}, cancel)
	<-started
	cancel()
	stop()
	if n := inRead.Load(); n != 0 {
		t.Fatalf("stop returned with %d status reads in progress", n)
	}
	n := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if got := calls.Load(); got != n {
		t.Fatalf("%d status reads after stop, want none", got-n)
	}
}
