package dbtest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

func testEventsAppendRead(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "r")
	l := claim(t, d, ten, "r", "w")
	before := time.Now()
	first, err := d.AppendEvents(bg(), l, []db.Event{
		{Event: "metadata", Data: json.RawMessage(`{"run_id":"r"}`)},
		{Event: "values", Data: json.RawMessage(`{"messages":[]}`)},
		{Event: "messages|sub:1", Data: json.RawMessage(`[{"content":"hé"},{"n":1}]`)},
	})
	ok(t, "AppendEvents", err)
	for i, e := range first {
		if e.Seq != int64(i+1) || e.RunID != "r" {
			t.Errorf("event %d: seq %d run %q, want seq %d of run r", i, e.Seq, e.RunID, i+1)
		}
		within(t, "event CreatedAt", e.CreatedAt, before, time.Now())
	}
	second, err := d.AppendEvents(bg(), l, events("updates", 0, 4))
	ok(t, "AppendEvents", err)
	if second[0].Seq != 4 || second[3].Seq != 7 {
		t.Errorf("second batch seqs %d..%d, want 4..7 (monotonic across batches)", second[0].Seq, second[3].Seq)
	}
	none, err := d.AppendEvents(bg(), l, nil)
	ok(t, "AppendEvents of nothing", err)
	if len(none) != 0 {
		t.Errorf("appending no events returned %v", none)
	}

	all, err := d.ReadEvents(bg(), ten, "r", 0, 0)
	ok(t, "ReadEvents", err)
	if len(all) != 7 {
		t.Fatalf("ReadEvents returned %d events, want 7", len(all))
	}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
	}
	if all[2].Event != "messages|sub:1" {
		t.Errorf("event 3 name %q, want messages|sub:1", all[2].Event)
	}
	jsonEq(t, "event 3 data", all[2].Data, `[{"content":"hé"},{"n":1}]`)
	jsonEq(t, "event 5 data", all[4].Data, `{"i":1}`)
	page, err := d.ReadEvents(bg(), ten, "r", 2, 3)
	ok(t, "ReadEvents after 2 limit 3", err)
	if len(page) != 3 || page[0].Seq != 3 || page[2].Seq != 5 {
		t.Errorf("ReadEvents after 2 limit 3 = %v, want seqs 3..5", seqs(page))
	}
	tail, err := d.ReadEvents(bg(), ten, "r", 7, 0)
	ok(t, "ReadEvents after the last", err)
	if len(tail) != 0 {
		t.Errorf("ReadEvents after the last = %v, want none", seqs(tail))
	}
	mkRun(t, d, ten, "t", "quiet")
	empty, err := d.ReadEvents(bg(), ten, "quiet", 0, 0)
	ok(t, "ReadEvents of a run without events", err)
	if len(empty) != 0 {
		t.Errorf("a run without events has %v", seqs(empty))
	}
	_, err = d.ReadEvents(bg(), ten, "missing", 0, 0)
	isErr(t, "ReadEvents of a missing run", err, db.ErrNotFound)
	_, err = d.AppendEvents(bg(), l, []db.Event{{Event: "", Data: json.RawMessage(`1`)}})
	isErr(t, "AppendEvents of an unnamed event", err, db.ErrInvalid)
	_, err = d.AppendEvents(bg(), l, []db.Event{{Event: "x", Data: json.RawMessage(`{nope`)}})
	isErr(t, "AppendEvents of bad JSON", err, db.ErrInvalid)
	after, err := d.ReadEvents(bg(), ten, "r", 0, 0)
	ok(t, "ReadEvents", err)
	if len(after) != 7 {
		t.Errorf("rejected appends stored events: %d, want 7", len(after))
	}
}

func seqs(es []db.Event) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// testEventsConcurrent: the lease holder appends from several goroutines;
// the log stays gap-free and each batch gets consecutive seqs.
func testEventsConcurrent(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "r")
	l := claim(t, d, ten, "r", "w")
	const writers, batches, per = 6, 8, 3
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				got, err := d.AppendEvents(bg(), l, events(fmt.Sprintf("w%d", w), b*per, per))
				if err != nil {
					errs <- err
					return
				}
				for i := 1; i < len(got); i++ {
					if got[i].Seq != got[0].Seq+int64(i) {
						errs <- fmt.Errorf("a batch got seqs %v, want consecutive ones", seqs(got))
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := d.ReadEvents(bg(), ten, "r", 0, 0)
	ok(t, "ReadEvents", err)
	if len(all) != writers*batches*per {
		t.Fatalf("%d events stored, want %d", len(all), writers*batches*per)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log has a gap or a duplicate", i, e.Seq)
		}
	}
}

func testEventsDeletePrune(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkThread(t, d, ten, "u", nil)
	mkThread(t, d, ten, "v", nil)
	for _, r := range []struct{ thread, run string }{{"t", "old"}, {"u", "new"}, {"v", "live"}} {
		mkRun(t, d, ten, r.thread, r.run)
	}
	leases := map[string]db.Lease{}
	for _, r := range []string{"old", "new", "live"} {
		leases[r] = claim(t, d, ten, r, "w")
		_, err := d.AppendEvents(bg(), leases[r], events("values", 0, 3))
		ok(t, "AppendEvents", err)
	}

	// Rollback: delete a live run's events; the numbering continues.
	n, err := d.DeleteEvents(bg(), ten, "live")
	ok(t, "DeleteEvents", err)
	if n != 3 {
		t.Errorf("DeleteEvents removed %d, want 3", n)
	}
	evs, err := d.AppendEvents(bg(), leases["live"], events("values", 3, 1))
	ok(t, "AppendEvents after DeleteEvents", err)
	if evs[0].Seq != 4 {
		t.Errorf("first event after DeleteEvents has seq %d, want 4 (ids are never reused)", evs[0].Seq)
	}
	_, err = d.DeleteEvents(bg(), ten, "missing")
	isErr(t, "DeleteEvents of a missing run", err, db.ErrNotFound)

	_, err = d.FinishRun(bg(), leases["old"], db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	time.Sleep(5 * time.Millisecond)
	cutoff := time.Now()
	time.Sleep(5 * time.Millisecond)
	_, err = d.FinishRun(bg(), leases["new"], db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)

	n, err = d.PruneEvents(bg(), cutoff)
	ok(t, "PruneEvents", err)
	if n < 3 {
		t.Errorf("PruneEvents removed %d events, want at least old's 3", n)
	}
	count := func(run string) int {
		es, err := d.ReadEvents(bg(), ten, run, 0, 0)
		ok(t, "ReadEvents", err)
		return len(es)
	}
	if c := count("old"); c != 0 {
		t.Errorf("run ended before the cutoff keeps %d events, want 0", c)
	}
	if c := count("new"); c != 3 {
		t.Errorf("run ended after the cutoff keeps %d events, want 3", c)
	}
	if c := count("live"); c != 1 {
		t.Errorf("live run keeps %d events, want 1", c)
	}
	if _, err := d.GetRun(bg(), ten, "t", "old"); err != nil {
		t.Errorf("PruneEvents removed the run itself: %v", err)
	}
}
