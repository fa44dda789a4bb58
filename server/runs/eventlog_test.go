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

func (a *appendLog) AppendEvents(ctx context.Context, _ db.Lease, evs []db.Event) ([]db.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // as a database driver does
	}
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
	var got []string
	for len(got) < 2 {
		select {
		case <-sub.wake:
			evs, _, _, _ := sub.take()
			for _, ev := range evs {
				got = append(got, ev.Event)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("only %v reached the subscriber, want values and messages", got)
		}
	}
	if len(got) != 2 || got[0] != "values" || got[1] != "messages" {
		t.Fatalf("got %v, want [values messages]", got)
	}
}

// Events added after the run's context is cancelled (the task end of the
// task the cancel stopped, in the tasks stream mode) are still appended:
// a failed append would leave the cancelled run unfinished.
func TestEventLogWritesEventsOfCancelledRun(t *testing.T) {
	d := &appendLog{}
	l := newEventLog(d, NewBroker(), db.Lease{RunID: "r"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.add(ctx, "tasks", []byte(`{"id":"t","error":"cancelled"}`))
	if err := l.flush(context.Background()); err != nil {
		t.Fatalf("flush after a cancelled add: %v", err)
	}
	if len(d.evs) != 1 || d.evs[0].Event != "tasks" {
		t.Fatalf("appended %+v", d.evs)
	}
}
