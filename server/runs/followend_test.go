package runs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// countingLog is a statusLog that counts its reads and, with status set,
// reads the run's status with its events (db.EventsStatusReader).
type countingLog struct {
	statusLog
	withStatus bool
	reads      atomic.Int32 // log reads
	gets       atomic.Int32 // run reads
}

func (l *countingLog) ReadEvents(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, error) {
	l.reads.Add(1)
	return l.memLog.ReadEvents(ctx, tenant, runID, after, limit)
}

func (l *countingLog) GetRun(ctx context.Context, tenant, thread, id string) (db.Run, error) {
	l.gets.Add(1)
	return l.statusLog.GetRun(ctx, tenant, thread, id)
}

// statusReader adds ReadEventsStatus to a countingLog.
type statusReader struct{ *countingLog }

func (l statusReader) ReadEventsStatus(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, db.RunEnd, error) {
	l.mu.Lock()
	st := l.status
	l.mu.Unlock()
	evs, err := l.countingLog.ReadEvents(ctx, tenant, runID, after, limit)
	return evs, db.RunEnd{Status: st}, err
}

// followLog returns l as Follow reads it: with or without status.
func followLog(l *countingLog) FollowLog {
	if l.withStatus {
		return statusReader{l}
	}
	return l
}

// A run that ends in this process with every event delivered live is
// followed with one read of its log (the first) and none of its status;
// one whose last event did not come live (a lag, a relay) is read back,
// the log's read then telling its status; without status in the log read,
// the status is read once, after the first read of the log, as before.
func TestFollowRunEndedHere(t *testing.T) {
	for _, tc := range []struct {
		name             string
		withStatus, lost bool
		wantReads        int32
		wantGets         int32
		wantEnd          db.RunStatus
	}{
		{"all live", true, false, 1, 0, db.RunError},
		{"last event lost", true, true, 2, 0, db.RunError},
		{"status read apart", false, false, 1, 1, db.RunError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &countingLog{statusLog: statusLog{status: db.RunPending}, withStatus: tc.withStatus}
			b := NewBroker()
			l.append(b, 1) // in the log before the follow starts
			got := make(chan Followed, 1)
			go func() {
				var seqs []int64
				f, err := FollowRun(context.Background(), followLog(l), b, "t", "th", "r", 0, time.Hour, func(ev db.Event) error {
					seqs = append(seqs, ev.Seq)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
				wantSeqs(t, seqs, 1, 3)
				got <- f
			}()
			for b.Subscribers("r") == 0 || l.reads.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			l.append(b, 1)
			if tc.lost { // durable, never published
				l.memLog.mu.Lock()
				l.evs = append(l.evs, db.Event{RunID: "r", Seq: 3})
				l.memLog.mu.Unlock()
			} else {
				l.append(b, 1)
			}
			l.set(db.RunError, false)
			b.endWith("r", runFinal{seq: 3, end: db.RunEnd{Status: db.RunError, Error: "boom"}})
			f := <-got
			if f.Last != 3 || f.End.Status != tc.wantEnd {
				t.Errorf("FollowRun = %+v; want last 3, end %q", f, tc.wantEnd)
			}
			if r, g := l.reads.Load(), l.gets.Load(); r != tc.wantReads || g != tc.wantGets {
				t.Errorf("%d log reads and %d run reads; want %d and %d", r, g, tc.wantReads, tc.wantGets)
			}
		})
	}
}

// A run found ended by the first read of its log (status with events)
// is done with that read: no status read, no tail read.
func TestFollowRunEndedBefore(t *testing.T) {
	l := &countingLog{statusLog: statusLog{status: db.RunSuccess}, withStatus: true}
	b := NewBroker()
	l.append(b, 2)
	f, err := FollowRun(context.Background(), followLog(l), b, "t", "th", "r", 0, time.Hour, func(db.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if f.Last != 2 || f.End.Status != db.RunSuccess || l.reads.Load() != 1 || l.gets.Load() != 0 {
		t.Errorf("FollowRun = %+v after %d log reads and %d run reads; want last 2, success, 1 and 0", f, l.reads.Load(), l.gets.Load())
	}
}
