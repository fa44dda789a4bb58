package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/checkpointtest"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
)

// Corrupt damages the stored checkpoint ref names as d says, for the
// conformance suite (checkpointtest.Corrupter).
func (s *Saver) Corrupt(ref checkpoint.Ref, d checkpointtest.Damage) error {
	var res sql.Result
	var err error
	switch d.Kind {
	case checkpointtest.DamageEmptyObject, checkpointtest.DamageNull:
		payload := "{}"
		if d.Kind == checkpointtest.DamageNull {
			payload = "null"
		}
		res, err = s.db.Write.Exec(`UPDATE checkpoints SET checkpoint = ? WHERE thread = ? AND ns = ? AND id = ?`,
			[]byte(payload), ref.ThreadID, ref.Namespace, ref.ID)
	case checkpointtest.DamageFlipCheckpoint:
		res, err = s.flip(`checkpoints`, `checkpoint`, `thread = ? AND ns = ? AND id = ?`, ref.ThreadID, ref.Namespace, ref.ID)
	case checkpointtest.DamageFlipBlob:
		res, err = s.flip(`blobs`, `data`, `thread = ? AND ns = ? AND key = ? AND version = ?`, ref.ThreadID, ref.Namespace, d.Key, int64(d.Version))
	case checkpointtest.DamageFlipWrite:
		res, err = s.flip(`writes`, `value`, `thread = ? AND ns = ? AND checkpoint_id = ? AND task_id = ? AND idx = 0`, ref.ThreadID, ref.Namespace, ref.ID, d.TaskID)
	default:
		return fmt.Errorf("unknown damage %q", d.Kind)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("corrupt %s: %d rows changed, %v", ref, n, err)
	}
	return nil
}

// flip changes one byte of column col of the one row of table that where
// selects.
func (s *Saver) flip(table, col, where string, args ...any) (sql.Result, error) {
	var data []byte
	if err := s.db.Write.QueryRow(`SELECT `+col+` FROM `+table+` WHERE `+where, args...).Scan(&data); err != nil {
		return nil, err
	}
	return s.db.Write.Exec(`UPDATE `+table+` SET `+col+` = ? WHERE `+where, append([]any{checkpointtest.Flip(data)}, args...)...)
}

var _ checkpointtest.Corrupter = (*Saver)(nil)

func open(t testing.TB, path string) *Saver {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestSaver(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return open(t, filepath.Join(t.TempDir(), "new", "dir", "cp.db"))
	})
}

// TestLimits checks the size limit; Savers of one test share a file, so
// reading data written under a larger limit is checked too.
func TestLimits(t *testing.T) {
	paths := map[string]string{}
	checkpointtest.RunLimits(t, func(t *testing.T, maxBytes int) checkpoint.Saver {
		path, ok := paths[t.Name()]
		if !ok {
			path = filepath.Join(t.TempDir(), "cp.db")
			paths[t.Name()] = path
		}
		s, err := Open(context.Background(), path, WithMaxBytes(maxBytes))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestSaverShared runs the suite against one database file shared by every
// subtest.
func TestSaverShared(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cp.db"))
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return s })
}

// alternating is a Saver that sends each call to the next of two Savers
// on one file, as two processes sharing the file would.
type alternating struct {
	savers [2]*Saver
	n      atomic.Uint32
}

func (a *alternating) next() *Saver { return a.savers[a.n.Add(1)%2] }

func (a *alternating) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	return a.next().Get(ctx, ref)
}

func (a *alternating) List(ctx context.Context, ref checkpoint.Ref, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return a.next().List(ctx, ref, opts)
}

func (a *alternating) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	return a.next().Put(ctx, ref, cp, md)
}

func (a *alternating) PutWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	return a.next().PutWrites(ctx, ref, taskID, writes)
}

func (a *alternating) DeleteThread(ctx context.Context, threadID string) error {
	return a.next().DeleteThread(ctx, threadID)
}

func (a *alternating) CopyThread(ctx context.Context, from, to string) error {
	return a.next().CopyThread(ctx, from, to)
}

func (a *alternating) Prune(ctx context.Context, opts checkpoint.PruneOptions) (int, error) {
	return a.next().Prune(ctx, opts)
}

func (a *alternating) Corrupt(ref checkpoint.Ref, d checkpointtest.Damage) error {
	return a.next().Corrupt(ref, d)
}

func (a *alternating) DeleteRun(ctx context.Context, threadID, runID string) (int, error) {
	return a.next().DeleteRun(ctx, threadID, runID)
}

// TestSaverTwoPools runs the suite with every call going to one of two
// Savers on one file in turn, so that each write is checked by the other
// connection pool's reads and conflicts are detected across pools.
func TestSaverTwoPools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	s := &alternating{savers: [2]*Saver{open(t, path), open(t, path)}}
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return s })
}

func full(key string, version uint64, data string) checkpoint.Blob {
	return checkpoint.Blob{Key: key, Version: version, Kind: checkpoint.Full, Data: json.RawMessage(data)}
}

func delta(key string, version, base uint64, data string) checkpoint.Blob {
	return checkpoint.Blob{Key: key, Version: version, Kind: checkpoint.Delta, Base: base, Data: json.RawMessage(data)}
}

// put stores a checkpoint after parent carrying blobs and returns its ref.
func put(t testing.TB, s checkpoint.Saver, ref checkpoint.Ref, parent string, versions map[string]uint64, blobs ...checkpoint.Blob) checkpoint.Ref {
	t.Helper()
	ref.ID = parent
	cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: versions, Blobs: blobs, Created: time.Now()}
	out, err := s.Put(context.Background(), ref, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Parent: parent})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return out
}

func migrationRows(t *testing.T, s *Saver) []string {
	t.Helper()
	rows, err := s.db.Read.Query(`SELECT version, applied_at FROM schema_migrations WHERE component = ? ORDER BY version`, Component)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v int
		var at string
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(v, " ", at))
	}
	return out
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cp.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ref := checkpoint.Ref{ThreadID: "t1", Namespace: "sub"}
	a := put(t, s, ref, "", map[string]uint64{"k": 1}, full("k", 1, `"one"`))
	b := put(t, s, ref, a.ID, map[string]uint64{"k": 2}, delta("k", 2, 1, `["two"]`))
	if err := s.PutWrites(ctx, b, "task", []checkpoint.PendingWrite{{Key: "k", Value: json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
	before := migrationRows(t, s)
	if len(before) != len(migrations) {
		t.Fatalf("schema_migrations has %q, want %d rows", before, len(migrations))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	if after := migrationRows(t, s); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("reopening changed schema_migrations from %q to %q", before, after)
	}
	tup, err := s.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if tup.Ref != b || len(tup.Checkpoint.Blobs) != 2 || len(tup.Writes) != 1 {
		t.Errorf("Get after reopening = %+v, want %s with 2 blobs and 1 write", tup, b)
	}
	// The reopened saver goes on from the stored latest.
	put(t, s, ref, b.ID, map[string]uint64{"k": 3}, full("k", 3, `"three"`))
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cp.db")
	s := open(t, path)
	if _, err := s.db.Write.Exec(`INSERT INTO schema_migrations (component, version, applied_at) VALUES (?, ?, 'later')`,
		Component, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err == nil {
		s2.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	}
	if !errors.Is(err, sqlitedb.ErrNewerSchema) {
		t.Errorf("Open error = %v, want sqlitedb.ErrNewerSchema", err)
	}
	for _, part := range []string{path, Component, fmt.Sprint(len(migrations) + 1), "newer"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("Open error %q does not mention %q", err, part)
		}
	}
}

// TestTwoSavers writes through two Savers (two connection pools, as two
// processes would have) on one file at once.
func TestTwoSavers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cp.db")
	savers := []*Saver{open(t, path), open(t, path)}
	const goroutines, steps = 8, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		s := savers[g%2]
		wg.Go(func() {
			ref := checkpoint.Ref{ThreadID: fmt.Sprintf("thread-%d", g)}
			parent := ""
			for i := range steps {
				v := uint64(i + 1)
				cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"k": v},
					Blobs: []checkpoint.Blob{full("k", v, fmt.Sprint(i))}, Created: time.Now()}
				ref.ID = parent
				out, err := s.Put(ctx, ref, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: i, Parent: parent})
				if err != nil {
					t.Errorf("goroutine %d step %d: Put: %v", g, i, err)
					return
				}
				parent = out.ID
				if _, err := savers[(g+1)%2].Get(ctx, out); err != nil {
					t.Errorf("goroutine %d step %d: Get through the other saver: %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		n := 0
		for _, err := range savers[0].List(ctx, checkpoint.Ref{ThreadID: fmt.Sprintf("thread-%d", g)}, checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != steps {
			t.Errorf("thread %d has %d checkpoints, want %d", g, n, steps)
		}
	}
}

func TestCorruptNamesCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "cp.db"))
	ref := checkpoint.Ref{ThreadID: "thread-x", Namespace: "ns-y"}
	a0 := put(t, s, ref, "", map[string]uint64{"k": 1}, full("k", 1, `1`))
	a := put(t, s, ref, a0.ID, map[string]uint64{"k": 2}, full("k", 2, `2`))
	b := put(t, s, ref, a.ID, map[string]uint64{"k": 2})
	// A row as written before checksums (sum NULL) whose payload became
	// "{}": only validation can tell.
	if _, err := s.db.Write.Exec(`UPDATE checkpoints SET checkpoint = '{}', sum = NULL WHERE thread = ? AND ns = ? AND id = ?`,
		a.ThreadID, a.Namespace, a.ID); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s of a corrupted checkpoint succeeded", what)
		}
		if errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("%s: error %v wraps ErrNotFound", what, err)
		}
		if !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("%s: error %v does not wrap ErrCorrupt", what, err)
		}
		for _, part := range []string{"thread-x", "ns-y", a.ID, "creation time"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s: error %q does not name %q", what, err, part)
			}
		}
	}
	tup, err := s.Get(ctx, a)
	if tup != nil {
		t.Errorf("Get returned a Tuple with its error: %+v", tup)
	}
	check("Get", err)
	var got []string
	for tup, err := range s.List(ctx, ref, checkpoint.ListOptions{}) {
		if err != nil {
			check("List", err)
			break
		}
		got = append(got, tup.Ref.ID)
	}
	if len(got) != 1 || got[0] != b.ID {
		t.Errorf("List yielded %q before the error, want [%s]", got, b.ID)
	}
	// Prune cannot tell which blobs the unreadable kept checkpoint needs:
	// it fails and removes nothing.
	n, err := s.Prune(ctx, checkpoint.PruneOptions{ThreadID: ref.ThreadID, KeepLatest: 2})
	check("Prune", err)
	if n != 0 {
		t.Errorf("failed Prune reported %d checkpoints removed", n)
	}
	if _, err := s.Get(ctx, a0); err != nil {
		t.Errorf("Get of the checkpoint a failed Prune would have removed: %v", err)
	}
}

func TestSizeGrows(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "cp.db"))
	before, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := checkpoint.Ref{ThreadID: "t"}
	parent := ""
	for i := range 50 {
		v := uint64(i + 1)
		parent = put(t, s, ref, parent, map[string]uint64{"k": v}, full("k", v, fmt.Sprintf(`"%0500d"`, i))).ID
	}
	after, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after <= before || after < 50*500 {
		t.Errorf("Size went from %d to %d bytes after writing 25 KB", before, after)
	}
}

func count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPruneCollectsBlobs checks what the suite cannot see: Prune deletes
// the blobs no kept checkpoint needs, and a Put stores each blob once.
func TestPruneCollectsBlobs(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "cp.db"))
	ref := checkpoint.Ref{ThreadID: "t"}
	c1 := put(t, s, ref, "", map[string]uint64{"m": 1, "t": 1}, full("m", 1, `[1]`), full("t", 1, `"T"`))
	c2 := put(t, s, ref, c1.ID, map[string]uint64{"m": 2, "t": 1}, delta("m", 2, 1, `[2]`), full("t", 1, `"T"`))
	c3 := put(t, s, ref, c2.ID, map[string]uint64{"m": 3, "t": 1}, full("m", 3, `[1,2,3]`))
	c4 := put(t, s, ref, c3.ID, map[string]uint64{"m": 4, "t": 1}, delta("m", 4, 3, `[4]`))
	blobs := func() int { return count(t, s.db.Read, `SELECT count(*) FROM blobs WHERE thread = 't'`) }
	if n := blobs(); n != 5 {
		t.Fatalf("%d blob rows after 4 Puts, want 5 (a repeated blob is stored once)", n)
	}
	if n, err := s.Prune(ctx, checkpoint.PruneOptions{KeepLatest: 2, ThreadID: "t"}); err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2", n, err)
	}
	// m1 and m2 are needed by no kept checkpoint; t1, m3 and m4 are.
	if n := blobs(); n != 3 {
		t.Errorf("%d blob rows after Prune, want 3", n)
	}
	if n := count(t, s.db.Read, `SELECT count(*) FROM blobs WHERE thread = 't' AND key = 'm' AND version IN (1, 2)`); n != 0 {
		t.Errorf("the blobs of m versions 1 and 2 survived Prune")
	}
	if _, err := s.Get(ctx, c4); err != nil {
		t.Errorf("Get after Prune: %v", err)
	}
	if err := s.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"checkpoints", "blobs", "writes"} {
		if n := count(t, s.db.Read, `SELECT count(*) FROM `+table+` WHERE thread = 't'`); n != 0 {
			t.Errorf("%d rows left in %s after DeleteThread", n, table)
		}
	}
}

// TestLargeVersions checks that versions above the int64 range survive.
func TestLargeVersions(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "cp.db"))
	ref := checkpoint.Ref{ThreadID: "t"}
	const big = 1<<63 + 5
	c := put(t, s, ref, "", map[string]uint64{"k": big + 1}, full("k", big, `1`), delta("k", big+1, big, `[2]`))
	tup, err := s.Get(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(tup.Checkpoint.Blobs) != 2 || tup.Checkpoint.Blobs[0].Version != big || tup.Checkpoint.Blobs[1].Base != big {
		t.Errorf("Get = %+v", tup.Checkpoint.Blobs)
	}
}

// BenchmarkDurableStep10Keys measures one durable superstep of a graph
// with ten state keys: a Put after the previous checkpoint of the thread,
// carrying ten new ~50-byte Full blobs. Besides ns/op it reports cpu-ns/op,
// the process's CPU time per step (WAL checkpoints included).
func BenchmarkDurableStep10Keys(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
	ref := checkpoint.Ref{ThreadID: "bench"}
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = fmt.Sprintf("key%02d", i)
	}
	parent := ""
	var step uint64
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		step++
		cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: make(map[string]uint64, len(keys)), Created: time.Now()}
		for _, k := range keys {
			cp.Versions[k] = step
			cp.Blobs = append(cp.Blobs, checkpoint.Blob{Key: k, Version: step, Kind: checkpoint.Full,
				Data: json.RawMessage(fmt.Sprintf(`{"value":"%s step %08d","n":%d}`, k, step, step))})
		}
		ref.ID = parent
		out, err := s.Put(ctx, ref, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: int(step), Parent: parent})
		if err != nil {
			b.Fatal(err)
		}
		parent = out.ID
	}
	// CPU time per step, less sensitive than ns/op to other processes
	// competing for the machine (0 where it is not measured).
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkGet10Keys measures reading the latest checkpoint of a thread
// whose ten keys each have a chain of one full blob and up to four deltas.
func BenchmarkGet10Keys(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
	ref := checkpoint.Ref{ThreadID: "bench"}
	parent := ""
	for step := uint64(1); step <= 50; step++ {
		cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{}, Created: time.Now()}
		for i := range 10 {
			k := fmt.Sprintf("key%02d", i)
			cp.Versions[k] = step
			blob := checkpoint.Blob{Key: k, Version: step, Kind: checkpoint.Full, Data: json.RawMessage(fmt.Sprintf(`["%s step %08d"]`, k, step))}
			if step%5 != 1 {
				blob.Kind, blob.Base = checkpoint.Delta, step-1
			}
			cp.Blobs = append(cp.Blobs, blob)
		}
		ref.ID = parent
		out, err := s.Put(ctx, ref, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Parent: parent})
		if err != nil {
			b.Fatal(err)
		}
		parent = out.ID
	}
	ref.ID = ""
	b.ReportAllocs()
	for b.Loop() {
		tup, err := s.Get(ctx, ref)
		if err != nil {
			b.Fatal(err)
		}
		if len(tup.Checkpoint.Blobs) != 50 {
			b.Fatalf("Get returned %d blobs, want 50", len(tup.Checkpoint.Blobs))
		}
	}
}

// TestUpgradeReadsOldRows opens a file written with the schema before
// checksums, upgrades it, and reads its rows without the check; a row of
// that age whose payload became "{}" is still refused by validation, and
// new rows written after the upgrade carry checksums.
func TestUpgradeReadsOldRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sqlitedb.Open(ctx, path, Component, migrations[:1])
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO checkpoints (thread, ns, id, parent, step, source, run_id, extra, checkpoint, created)
		VALUES ('t', '', 'id1', '', 0, 'input', 'run-1', NULL, '{"versions":{"k":1},"created":"2026-01-01T00:00:00Z"}', 0)`,
		`INSERT INTO checkpoints (thread, ns, id, parent, step, source, run_id, extra, checkpoint, created)
		VALUES ('t', '', 'id2', 'id1', 1, 'loop', 'run-1', NULL, '{}', 0)`,
		`INSERT INTO blobs (thread, ns, key, version, kind, base, data) VALUES ('t', '', 'k', 1, 1, 0, '"v"')`,
		`INSERT INTO writes (thread, ns, checkpoint_id, task_id, idx, key, value) VALUES ('t', '', 'id1', 'task', 0, 'k', '"w"')`,
	} {
		if _, err := db.Write.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := open(t, path)
	tup, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t", ID: "id1"})
	if err != nil {
		t.Fatalf("Get of a row written before checksums: %v", err)
	}
	if len(tup.Checkpoint.Blobs) != 1 || string(tup.Checkpoint.Blobs[0].Data) != `"v"` || len(tup.Writes) != 1 || string(tup.Writes[0].Value) != `"w"` {
		t.Errorf("Get of an old row = %+v", tup)
	}
	if _, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t", ID: "id2"}); !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Errorf("Get of an old row holding {}: error = %v, want ErrCorrupt", err)
	}

	ref := put(t, s, checkpoint.Ref{ThreadID: "t2"}, "", map[string]uint64{"k": 1}, full("k", 1, `1`))
	var n int
	err = s.db.Read.QueryRow(`SELECT (SELECT count(*) FROM checkpoints WHERE thread = ?1 AND sum IS NOT NULL) +
		(SELECT count(*) FROM blobs WHERE thread = ?1 AND sum IS NOT NULL)`, ref.ThreadID).Scan(&n)
	if err != nil || n != 2 {
		t.Errorf("rows with a checksum after the upgrade = %d, %v; want 2", n, err)
	}
}

// TestUnknownBlobKindIsCorrupt reads a blob whose kind no Put stores, in a
// row without a checksum (as written before checksums): validation alone
// must report it as damage.
func TestUnknownBlobKindIsCorrupt(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "cp.db"))
	ref := put(t, s, checkpoint.Ref{ThreadID: "t"}, "", map[string]uint64{"k": 1}, full("k", 1, `1`))
	if _, err := s.db.Write.Exec(`UPDATE blobs SET kind = 7, sum = NULL WHERE thread = 't'`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, ref)
	if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("Get of a blob of unknown kind: error = %v, want ErrCorrupt naming key \"k\"", err)
	}
}
