package runs

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// appendLog is the durable event log of eventLog's tests: it numbers and
// keeps what it is given.
type appendLog struct {
	db.Events
	mu  sync.Mutex
	evs []db.Event
}

func (a *appendLog) AppendEvents(_ context.Context, _ db.Lease, evs []db.Event) ([]db.Event, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]db.Event, len(evs))
	for i, ev := range evs {
		ev.Seq = int64(len(a.evs) + 1)
		a.evs = append(a.evs, ev)
		out[i] = ev
	}
	return out, nil
}

// Token chunks followed by silence (a model pausing mid-reply) still
// reach subscribers: the buffer is flushed without waiting for the next
// event.
func TestEventLogFlushesChunksLeftWaiting(t *testing.T) {
	b := NewBroker()
	sub := b.Subscribe("r")
	defer sub.Close()
	l := newEventLog(&appendLog{}, b, db.Lease{RunID: "r"})
	l.add(context.Background(), "values", []byte(`{}`)) // flushed at once
	l.add(context.Background(), "messages", []byte(`["chunk"]`))
	for _, want := range []string{"values", "messages"} {
		select {
		case ev := <-sub.ch:
			if ev.Event != want {
				t.Fatalf("got %s, want %s", ev.Event, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s event never reached the subscriber", want)
		}
	}
}
