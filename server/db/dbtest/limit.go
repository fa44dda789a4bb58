package dbtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// testClaimWithin: ClaimRunWithin refuses a tenant's claim beyond max
// running runs with ErrTenantBusy (the run stays pending), leaves other
// tenants alone, frees the slot when a run finishes, and holds the cap
// when many claims race.
func testClaimWithin(t *testing.T, d db.DB) {
	lim, isLimiter := d.(db.RunLimiter)
	if !isLimiter {
		t.Skipf("%T does not implement db.RunLimiter", d)
	}
	ten, other := tenant(t, "a"), tenant(t, "b")
	for i := range 3 {
		th := fmt.Sprintf("t%d", i)
		mkThread(t, d, ten, th, nil)
		mkRun(t, d, ten, th, "r"+th)
	}
	mkThread(t, d, other, "t0", nil)
	mkRun(t, d, other, "t0", "rt0")
	_, l0, err := lim.ClaimRunWithin(bg(), ten, "rt0", "w", time.Hour, 2)
	ok(t, "claim 1 of 2", err)
	_, _, err = lim.ClaimRunWithin(bg(), ten, "rt1", "w", time.Hour, 2)
	ok(t, "claim 2 of 2", err)
	_, _, err = lim.ClaimRunWithin(bg(), ten, "rt2", "w", time.Hour, 2)
	isErr(t, "claim 3 of 2", err, db.ErrTenantBusy)
	if r, err := d.GetRun(bg(), ten, "t2", "rt2"); err != nil || r.Status != db.RunPending {
		t.Errorf("the refused run: %s %v, want pending", r.Status, err)
	}
	_, _, err = lim.ClaimRunWithin(bg(), other, "rt0", "w", time.Hour, 2)
	ok(t, "another tenant's claim", err)
	_, err = d.FinishRun(bg(), l0, db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	_, _, err = lim.ClaimRunWithin(bg(), ten, "rt2", "w", time.Hour, 2)
	ok(t, "claim after a run finished", err)

	// Racing claimers of ten threads share three slots.
	race := tenant(t, "race")
	for i := range 10 {
		th := fmt.Sprintf("t%d", i)
		mkThread(t, d, race, th, nil)
		mkRun(t, d, race, th, "r"+th)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, busy := 0, 0
	for i := range 10 {
		wg.Go(func() {
			_, _, err := lim.ClaimRunWithin(bg(), race, fmt.Sprintf("rt%d", i), "w", time.Hour, 3)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, db.ErrTenantBusy):
				busy++
			default:
				t.Errorf("racing claim: %v", err)
			}
		})
	}
	wg.Wait()
	if won != 3 || busy != 7 {
		t.Errorf("racing claims: %d won, %d refused; want 3 and 7", won, busy)
	}
}
