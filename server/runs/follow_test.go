package runs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// statusLog is a memLog whose run status can end (or the run vanish)
// without the broker hearing of it, as when another replica ends it.
type statusLog struct {
	memLog
	mu      sync.Mutex
	status  db.RunStatus
	deleted bool
}

func (l *statusLog) GetRun(context.Context, string, string, string) (db.Run, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deleted {
		return db.Run{}, db.ErrNotFound
	}
	return db.Run{ID: "r", Status: l.status}, nil
}

func (l *statusLog) set(status db.RunStatus, deleted bool) {
	l.mu.Lock()
	l.status, l.deleted = status, deleted
	l.mu.Unlock()
}

// A run that ends elsewhere (its status turns terminal, the broker hears
// nothing) is noticed by the poll, and its log's tail is handed over.
func TestFollowNoticesAnEndElsewhere(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		l := &statusLog{status: db.RunRunning}
		b := NewBroker()
		l.append(b, 3)
		done := make(chan []int64, 1)
		go func() {
			var seqs []int64
			_, err := Follow(context.Background(), l, b, "t", "th", "r", 0, time.Millisecond, func(ev db.Event) error {
				seqs = append(seqs, ev.Seq)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			done <- seqs
		}()
		// Two more events reach the log, unpublished, then the run ends
		// (or is deleted with its thread) elsewhere.
		l.memLog.mu.Lock()
		l.evs = append(l.evs, db.Event{RunID: "r", Seq: 4}, db.Event{RunID: "r", Seq: 5})
		l.memLog.mu.Unlock()
		l.set(db.RunSuccess, deleted)
		seqs := <-done
		if deleted {
			continue // the tail of a deleted run is gone with it; ending is what counts
		}
		wantSeqs(t, seqs, 1, 5)
	}
}

// fn's error stops Follow and is returned with the last Seq handed over.
func TestFollowStopsOnCallerError(t *testing.T) {
	l := &statusLog{status: db.RunRunning}
	b := NewBroker()
	l.append(b, 4)
	stop := errors.New("enough")
	last, err := Follow(context.Background(), l, b, "t", "th", "r", 0, time.Millisecond, func(ev db.Event) error {
		if ev.Seq == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || last != 2 {
		t.Errorf("last %d, err %v; want 2 and the caller's error", last, err)
	}
}
