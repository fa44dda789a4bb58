package runs

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/server/db"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memLog is a run's durable log in memory, appended and published the way
// the run service does: durable first, then live.
type memLog struct {
	mu    sync.Mutex
	evs   []db.Event
	ended bool
}

func (l *memLog) ReadEvents(_ context.Context, _, _ string, after int64, limit int) ([]db.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []db.Event
	for _, ev := range l.evs {
		if ev.Seq > after && (limit == 0 || len(out) < limit) {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (l *memLog) append(b *Broker, n int) {
	l.mu.Lock()
	var evs []db.Event
	for range n {
		ev := db.Event{RunID: "r", Seq: int64(len(l.evs) + 1), Event: "values"}
		l.evs = append(l.evs, ev)
		evs = append(evs, ev)
	}
	l.mu.Unlock()
	b.Publish("r", evs...)
}

func (l *memLog) end(b *Broker) {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	b.End("r")
}

func (l *memLog) isEnded(context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended, nil
}

func collect(t *testing.T, l *memLog, b *Broker, after int64, slow time.Duration) <-chan []int64 {
	out := make(chan []int64, 1)
	go func() {
		var seqs []int64
		for ev, err := range Join(context.Background(), l, b, "t", "r", after, l.isEnded) {
			if err != nil {
				t.Error(err)
				break
			}
			seqs = append(seqs, ev.Seq)
			time.Sleep(slow)
		}
		out <- seqs
	}()
	return out
}

func wantSeqs(t *testing.T, got []int64, from, to int64) {
	t.Helper()
	if int64(len(got)) != to-from+1 {
		t.Fatalf("got %d events (%v...), want %d..%d once each", len(got), head(got), from, to)
	}
	for i, s := range got {
		if s != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d (no gap, no duplicate): %v", i, s, from+int64(i), head(got))
		}
	}
}

func head(s []int64) string {
	if len(s) > 20 {
		return fmt.Sprint(s[:20], "...")
	}
	return fmt.Sprint(s)
}

// A joiner that arrives mid-run, reads the log, then the live events, sees
// every event once, in order, even while events are published during its
// read.
func TestJoinMidRunNoGapNoDuplicate(t *testing.T) {
	l, b := &memLog{}, NewBroker()
	l.append(b, 100)
	got := collect(t, l, b, 0, 0)
	for range 50 {
		l.append(b, 7)
	}
	l.end(b)
	wantSeqs(t, <-got, 1, 450)
	if n := b.Subscribers("r"); n != 0 {
		t.Errorf("%d subscriptions left open", n)
	}
}

// A slow subscriber that falls behind its buffer is caught up from the log
// and still sees every event once.
func TestJoinSlowSubscriberCatchesUp(t *testing.T) {
	l, b := &memLog{}, NewBroker()
	got := collect(t, l, b, 0, 100*time.Microsecond)
	time.Sleep(5 * time.Millisecond)
	for range 40 {
		l.append(b, 25) // 1000 events, far past the buffer
	}
	l.end(b)
	wantSeqs(t, <-got, 1, 1000)
}

// Joining after a last event id resumes after it; joining a run that has
// ended reads the log and returns.
func TestJoinAfterAndEnded(t *testing.T) {
	l, b := &memLog{}, NewBroker()
	l.append(b, 30)
	got := collect(t, l, b, 12, 0)
	l.append(b, 5)
	l.end(b)
	wantSeqs(t, <-got, 13, 35)
	wantSeqs(t, <-collect(t, l, b, 0, 0), 1, 35)
}

// A consumer that stops early releases its subscription.
func TestJoinConsumerStops(t *testing.T) {
	l, b := &memLog{}, NewBroker()
	l.append(b, 10)
	n := 0
	for range Join(context.Background(), l, b, "t", "r", 0, l.isEnded) {
		if n++; n == 3 {
			break
		}
	}
	if b.Subscribers("r") != 0 {
		t.Error("the subscription outlived its consumer")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		for range Join(ctx, l, b, "t", "r", 10, l.isEnded) {
		}
		close(done)
	}()
	time.Sleep(5 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Join did not return when its context ended")
	}
}

// A subscription holds only the events it has not taken: delivering past
// subBuffer marks it lagging instead of growing its queue, and what was
// taken is handed back in order.
func TestSubscriptionQueueBounded(t *testing.T) {
	b := NewBroker()
	sub := b.Subscribe("r")
	defer sub.Close()
	for i := range subBuffer + 10 {
		b.Publish("r", db.Event{RunID: "r", Seq: int64(i + 1)})
	}
	evs, lagged, ended, _ := sub.take()
	if len(evs) != subBuffer || !lagged || ended {
		t.Fatalf("took %d events (lagged %v, ended %v), want %d and lagging", len(evs), lagged, ended, subBuffer)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d, want %d", i, ev.Seq, i+1)
		}
	}
	b.Publish("r", db.Event{RunID: "r", Seq: 100})
	b.End("r")
	evs, lagged, ended, _ = sub.take()
	if len(evs) != 1 || evs[0].Seq != 100 || lagged || !ended {
		t.Fatalf("second take: %d events (lagged %v, ended %v), want seq 100 and ended", len(evs), lagged, ended)
	}
}
