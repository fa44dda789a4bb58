package dbtest

import (
	"errors"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// testImportLegacyLeases: the rows of an export made before a run's lease
// moved onto its row (runs without the lease columns, then the table
// trellis_leases, db.LegacyLeases) import as they did: the run holds no
// lease until its lease row comes, then holds it (listed when expired,
// renewed, fenced) with the source's owner, token and expiry. Importing
// it again, a lease row of a run that holds a lease already, or of a
// missing run, changes nothing; a trellis_leases table with other
// columns is refused.
func testImportLegacyLeases(t *testing.T, d db.DB) {
	e, isExporter := d.(db.Exporter)
	if !isExporter {
		t.Skipf("%T does not implement db.Exporter", d)
	}
	src, dst := tenant(t, "src"), tenant(t, "dst")
	mkThread(t, d, src, "th", nil)
	mkThread(t, d, dst, "th", nil)
	mkRun(t, d, src, "th", "r1")
	mkRun(t, d, src, "th", "r2") // pending, no lease
	l := claim(t, d, src, "r1", "w")

	// The source's runs as an old export holds them: no lease columns.
	var runs db.Table
	for _, tb := range db.Tables {
		if tb.Name == "trellis_runs" {
			runs = tb
		}
	}
	old := db.Table{Name: runs.Name, Key: runs.Key}
	var keep []int
	for i, c := range runs.Columns {
		if c.Name != "lease_owner" && c.Name != "lease_expires_at" {
			old.Columns = append(old.Columns, c)
			keep = append(keep, i)
		}
	}
	if len(keep) != len(runs.Columns)-2 {
		t.Fatalf("trellis_runs' columns %v: want lease_owner and lease_expires_at among them", runs.Columns)
	}
	var moved []db.Row
	for _, r := range exportAll(t, e, src)["trellis_runs"] {
		var o db.Row
		for _, i := range keep {
			o = append(o, r[i])
		}
		o[old.Index("tenant")] = dst
		moved = append(moved, o)
	}
	n, err := e.ImportRows(bg(), old, moved)
	ok(t, "ImportRows of old runs", err)
	if n != 2 {
		t.Fatalf("imported %d old runs, want 2", n)
	}
	want := l
	want.Tenant = dst
	if _, err := d.RenewLease(bg(), want, time.Hour); !errors.Is(err, db.ErrLeaseLost) {
		t.Errorf("RenewLease of a run imported without its lease row: %v, want ErrLeaseLost", err)
	}

	row := func(run, owner string, token int64, exp time.Time) db.Row {
		return db.Row{dst, run, "th", owner, token, exp.UTC()}
	}
	n, err = e.ImportRows(bg(), db.LegacyLeases, []db.Row{row("r1", l.Owner, l.Token, l.ExpiresAt), row("gone", "w", 1, l.ExpiresAt)})
	ok(t, "ImportRows of old leases", err)
	if n != 1 {
		t.Errorf("old lease rows imported: %d, want 1 (the missing run's is skipped)", n)
	}
	for what, r := range map[string]db.Row{
		"again":                        row("r1", l.Owner, l.Token, l.ExpiresAt),
		"over a lease the run holds":   row("r1", "x", l.Token+5, l.ExpiresAt.Add(time.Hour)),
		"of a run that holds no lease": row("gone", "x", 1, l.ExpiresAt),
	} {
		n, err := e.ImportRows(bg(), db.LegacyLeases, []db.Row{r})
		ok(t, "ImportRows of an old lease "+what, err)
		if n != 0 {
			t.Errorf("an old lease row imported %s changed %d runs, want 0", what, n)
		}
	}
	got := expiredOf(t, d, dst, l.ExpiresAt)
	if len(got) != 1 || got[0].RunID != "r1" || got[0].ThreadID != "th" || got[0].Owner != l.Owner || got[0].Token != l.Token ||
		!got[0].ExpiresAt.Equal(l.ExpiresAt) {
		t.Errorf("expired leases after the import %+v, want the source's %+v", got, want)
	}
	_, err = d.RenewLease(bg(), want, time.Hour)
	ok(t, "RenewLease of the imported lease", err)
	stale := want
	stale.Token--
	if _, err := d.AppendEvents(bg(), stale, events("e", 0, 1)); !errors.Is(err, db.ErrLeaseLost) {
		t.Errorf("AppendEvents with an older token than the imported lease's: %v, want ErrLeaseLost", err)
	}
	_, err = d.FinishRun(bg(), want, db.RunSuccess, nil, "")
	ok(t, "FinishRun with the imported lease", err)

	bad := db.LegacyLeases
	bad.Columns = append([]db.Column(nil), bad.Columns[:5]...)
	if _, err := e.ImportRows(bg(), bad, []db.Row{{dst, "r2", "th", "w", int64(1)}}); err == nil {
		t.Error("ImportRows of a trellis_leases table without an expiry is not an error")
	}
}

// CheckMovedLease checks d, opened (and so migrated) over a database of
// a schema from before a run's lease moved onto its row, in which the
// table trellis_leases held the lease l and no lease of the run free
// (whose last token was 1): l is listed expired at its expiry with its
// thread, owner and token, renews and fences with its token and no other,
// and ends with its run's finish; free holds no lease.
func CheckMovedLease(t *testing.T, d db.DB, l db.Lease, free string) {
	t.Helper()
	got := expiredOf(t, d, l.Tenant, l.ExpiresAt)
	if len(got) != 1 || got[0].RunID != l.RunID || got[0].ThreadID != l.ThreadID || got[0].Owner != l.Owner ||
		got[0].Token != l.Token || !got[0].ExpiresAt.Equal(l.ExpiresAt) {
		t.Errorf("expired leases after the migration %+v, want %+v", got, l)
	}
	if got := expiredOf(t, d, l.Tenant, l.ExpiresAt.Add(-time.Microsecond)); len(got) != 0 {
		t.Errorf("leases expired before the moved lease's expiry: %+v", got)
	}
	stale := l
	stale.Token--
	if _, err := d.RenewLease(bg(), stale, time.Hour); !errors.Is(err, db.ErrLeaseLost) {
		t.Errorf("RenewLease with an older token than the moved lease's: %v, want ErrLeaseLost", err)
	}
	if _, err := d.RenewLease(bg(), db.Lease{Tenant: l.Tenant, RunID: free, ThreadID: l.ThreadID, Owner: l.Owner, Token: 1}, time.Hour); !errors.Is(err, db.ErrLeaseLost) {
		t.Errorf("RenewLease of run %s, which had no lease row: %v, want ErrLeaseLost", free, err)
	}
	renewed, err := d.RenewLease(bg(), l, time.Hour)
	ok(t, "RenewLease of the moved lease", err)
	if !renewed.ExpiresAt.After(l.ExpiresAt) {
		t.Errorf("the moved lease renewed expires at %v, not after %v", renewed.ExpiresAt, l.ExpiresAt)
	}
	_, err = d.AppendEvents(bg(), l, events("e", 0, 2))
	ok(t, "AppendEvents with the moved lease", err)
	_, err = d.FinishRun(bg(), l, db.RunSuccess, nil, "")
	ok(t, "FinishRun with the moved lease", err)
	if got := expiredOf(t, d, l.Tenant, l.ExpiresAt.Add(2*time.Hour)); len(got) != 0 {
		t.Errorf("leases after the run's finish: %+v, want none", got)
	}
}
