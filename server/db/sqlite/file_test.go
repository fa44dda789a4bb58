package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cpsqlite "github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/sqlite"
	stsqlite "github.com/trellis-agents/trellis/store/sqlite"
)

var ctx = context.Background()

// TestSharesFileWithSaverAndStore: the service's tables live in the same
// file as the checkpoint saver's and the store's, each with its own
// migrations.
func TestSharesFileWithSaverAndStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.db")
	saver, err := cpsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	st, err := stsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := open(t, path)
	if _, err := d.CreateThread(ctx, "t", db.Thread{ID: "x"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT component, max(version) FROM schema_migrations GROUP BY component ORDER BY component`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var c string
		var v int
		if err := rows.Scan(&c, &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	if !strings.Contains(strings.Join(got, ","), sqlite.Component) || !strings.Contains(strings.Join(got, ","), cpsqlite.Component) || len(got) < 3 {
		t.Errorf("components migrated in the shared file: %v, want the saver's, the store's and %q", got, sqlite.Component)
	}
}

// TestReopenKeepsData: rows, lease tokens and event numbering survive a
// close and reopen.
func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "re.db")
	d, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateThread(ctx, "ten", db.Thread{ID: "t", Metadata: db.Metadata{"k": "v"}}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateRun(ctx, "ten", db.Run{ID: "r", ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	_, l, err := d.ClaimRun(ctx, "ten", "r", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AppendEvents(ctx, l, []db.Event{{Event: "values", Data: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2 := open(t, path)
	evs, err := d2.AppendEvents(ctx, l, []db.Event{{Event: "values", Data: []byte(`2`)}})
	if err != nil {
		t.Fatalf("the lease does not hold after a reopen: %v", err)
	}
	if evs[0].Seq != 2 {
		t.Errorf("first event after reopen has seq %d, want 2", evs[0].Seq)
	}
	th, err := d2.GetThread(ctx, "ten", "t")
	if err != nil || th.Metadata["k"] != "v" {
		t.Errorf("thread after reopen: %+v, %v", th, err)
	}
}

// TestOneRunningRunIsASchemaRule: the partial unique index refuses a
// second running run of a thread even to a statement that bypasses
// ClaimRun's checks.
func TestOneRunningRunIsASchemaRule(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "idx.db"))
	if _, err := d.CreateThread(ctx, "ten", db.Thread{ID: "t"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"a", "b"} {
		if _, err := d.CreateRun(ctx, "ten", db.Run{ID: r, ThreadID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Exec(`UPDATE trellis_runs SET status = 'running' WHERE tenant = 'ten' AND run_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	err := d.Exec(`UPDATE trellis_runs SET status = 'running' WHERE tenant = 'ten' AND run_id = 'b'`)
	if err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("a second running run of a thread was stored (error %v); the partial unique index is missing", err)
	}
	// Another tenant's thread of the same ID may run.
	if _, err := d.CreateThread(ctx, "other", db.Thread{ID: "t"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateRun(ctx, "other", db.Run{ID: "a", ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Exec(`UPDATE trellis_runs SET status = 'running' WHERE tenant = 'other' AND run_id = 'a'`); err != nil {
		t.Errorf("the same thread ID in another tenant cannot run: %v", err)
	}
}

// TestTwoHandlesOneFile: two DBs on one file, as two processes would
// have, race to claim two runs of one thread: one wins, one gets ErrBusy;
// both append to the winner's log without a gap.
func TestTwoHandlesOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.db")
	ds := []*sqlite.DB{open(t, path), open(t, path)}
	if _, err := ds[0].CreateThread(ctx, "ten", db.Thread{ID: "t"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"a", "b"} {
		if _, err := ds[1].CreateRun(ctx, "ten", db.Run{ID: r, ThreadID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	leases := make([]db.Lease, 2)
	errs := make([]error, 2)
	for i, r := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, leases[i], errs[i] = ds[i].ClaimRun(ctx, "ten", r, "w", time.Minute)
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			winner = i
		} else if !errors.Is(err, db.ErrBusy) {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	if winner < 0 || errs[1-winner] == nil {
		t.Fatalf("claims: %v, want one success and one ErrBusy", errs)
	}
	l := leases[winner]
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := ds[i].AppendEvents(ctx, l, []db.Event{{Event: "e", Data: []byte(`{}`)}, {Event: "e", Data: []byte(`{}`)}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	evs, err := ds[0].ReadEvents(ctx, "ten", l.RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if len(evs) != 80 {
		t.Errorf("%d events, want 80", len(evs))
	}
}

// TestOpenErrors: an empty path and a file from a newer Trellis are
// refused with errors that say so.
func TestOpenErrors(t *testing.T) {
	if _, err := sqlite.Open(ctx, ""); err == nil || !strings.Contains(err.Error(), "path is empty") {
		t.Errorf("Open(\"\") = %v, want an error saying the path is empty", err)
	}
	path := filepath.Join(t.TempDir(), "new.db")
	d := open(t, path)
	if err := d.Exec(`INSERT INTO schema_migrations (component, version, applied_at) VALUES (?, 99, 'later')`, sqlite.Component); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, "sqlite://"+path); !errors.Is(err, sqlitedb.ErrNewerSchema) {
		t.Errorf("Open of a file from a newer Trellis = %v, want ErrNewerSchema", err)
	}
}
