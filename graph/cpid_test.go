package graph

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/trellis-agents/trellis/checkpoint"
)

// TestCheckpointIDLayout checks that the engine's IDs are UUIDv7 strings
// whose time stamp is the checkpoint's Created, like checkpoint.NewID's.
func TestCheckpointIDLayout(t *testing.T) {
	time.Sleep(2 * time.Millisecond) // past the time stamps of the IDs made so far
	now := time.Now()
	id := checkpointID(now)
	u, err := uuid.Parse(id)
	if err != nil {
		t.Fatalf("ID %q: %v", id, err)
	}
	if u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != id {
		t.Fatalf("ID %q: version %d, variant %s, canonical %q; want a canonical RFC 4122 version 7 UUID", id, u.Version(), u.Variant(), u.String())
	}
	sec, nsec := u.Time().UnixTime()
	if got := time.Unix(sec, nsec).UnixMilli(); got != now.UnixMilli() {
		t.Errorf("ID %q holds millisecond %d, want %d", id, got, now.UnixMilli())
	}
	ref, _ := uuid.Parse(checkpoint.NewID())
	if len(id) != len(ref.String()) {
		t.Errorf("ID %q is not as long as checkpoint.NewID's %q", id, ref)
	}
}

// TestCheckpointIDOrder checks that IDs sort by when they were made: after
// one another, when the clock stands still or steps back, from concurrent
// runs, and interleaved with checkpoint.NewID a millisecond apart.
func TestCheckpointIDOrder(t *testing.T) {
	base := time.Now()
	var ids []string
	for i := range 2000 { // moves the generator at most 2000 × 256 ns past real time
		at := base
		if i%7 == 3 {
			at = base.Add(-time.Second) // the clock stepped back
		}
		ids = append(ids, checkpointID(at))
	}
	if !slices.IsSorted(ids) {
		t.Fatal("IDs made one after another do not sort in that order")
	}
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatal("IDs repeat")
	}

	var wg sync.WaitGroup
	per := make([][]string, 4)
	for g := range per {
		wg.Go(func() {
			for range 500 {
				per[g] = append(per[g], checkpointID(time.Now()))
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for g, got := range per {
		if !slices.IsSorted(got) {
			t.Errorf("goroutine %d: its IDs do not sort in the order it made them", g)
		}
		for _, id := range got {
			if seen[id] {
				t.Fatalf("ID %s made twice", id)
			}
			seen[id] = true
		}
	}

	// Against the checkpoint package's IDs, once real time has passed
	// this generator's.
	time.Sleep(3 * time.Millisecond)
	a := checkpointID(time.Now())
	time.Sleep(2 * time.Millisecond)
	b := checkpoint.NewID()
	time.Sleep(2 * time.Millisecond)
	c := checkpointID(time.Now())
	if !(a < b && b < c) {
		t.Errorf("IDs made 2 ms apart sort %s, %s, %s; want that order", a, b, c)
	}
}

// observeCheckpointID moves the IDs' clock past a UUIDv7 ID's time stamp,
// and ignores an older ID or one that is not a UUIDv7.
func TestObserveCheckpointID(t *testing.T) {
	before := lastIDTime.Load()
	for _, id := range []string{
		"ffffffff-ffff-4fff-bfff-ffffffffffff", // v4
		"ffffffff-ffff-7fff-bfff-fffffffffff",  // short
		"fffffffg-ffff-7fff-bfff-ffffffffffff", // not hex
		"00000000-0000-7000-8000-000000000000", // the epoch
		"ffffffff-ffff-7fff-bfff-ffffffffffff", // the end of the range
		"0f000000-0000-7000-8000-000000000000", // a corrupt stamp centuries ahead
		"",
	} {
		observeCheckpointID(id)
		if got := lastIDTime.Load(); got < before || got > max(before, time.Now().UnixMilli()<<12|0xfff) {
			t.Fatalf("observeCheckpointID(%q) moved the clock from %x to %x", id, before, got)
		}
	}
	ahead := time.Now().Add(100 * time.Millisecond)
	defer time.Sleep(time.Until(ahead) + 2*time.Millisecond) // for the other tests
	for _, upper := range []bool{false, true} {
		// An ID another process stamped ahead of this one's clock.
		ms := ahead.UnixMilli()
		if upper {
			ms++
		}
		seen := fmt.Sprintf("%08x-%04x-7abc-8000-000000000000", ms>>16, ms&0xffff)
		if upper {
			seen = strings.ToUpper(seen)
		}
		observeCheckpointID(seen)
		if id := checkpointID(time.Now()); id <= strings.ToLower(seen) {
			t.Errorf("an ID made after observing %s is %s; want it to sort after", seen, id)
		}
	}
}
