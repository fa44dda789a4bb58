package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/checkpointtest"
	"github.com/trellis-agents/trellis/checkpoint/postgres"
	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a Saver on schema and closes it when t ends.
func open(t *testing.T, dsn, schema string) *postgres.Saver {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// newSaver opens a Saver on a schema of its own.
func newSaver(t *testing.T) *postgres.Saver {
	t.Helper()
	dsn, schema := pgdbtest.Schema(t)
	return open(t, dsn, schema)
}

// TestSuite runs the conformance suite with a fresh schema per subtest.
func TestSuite(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return newSaver(t) })
}

// TestLimits checks the size limit; the Savers of one test share a schema,
// so reading data written under a larger limit is checked too.
func TestLimits(t *testing.T) {
	type db struct{ dsn, schema string }
	dbs := map[string]db{}
	checkpointtest.RunLimits(t, func(t *testing.T, maxBytes int) checkpoint.Saver {
		d, ok := dbs[t.Name()]
		if !ok {
			d.dsn, d.schema = pgdbtest.Schema(t)
			dbs[t.Name()] = d
		}
		s, err := postgres.Open(context.Background(), d.dsn, postgres.WithSchema(d.schema), postgres.WithMaxBytes(maxBytes))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(s.Close)
		return s
	})
}

// TestSuiteShared runs the suite against one Saver, on one schema, shared
// by every subtest, as a long-lived process would use it.
func TestSuiteShared(t *testing.T) {
	s := newSaver(t)
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return s })
}

func ctx() context.Context { return context.Background() }

// put stores a checkpoint after parent with one full blob of key "k".
func put(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref, parent string, version uint64) checkpoint.Ref {
	t.Helper()
	cp := checkpoint.Checkpoint{
		ID:       checkpoint.NewID(),
		Versions: map[string]uint64{"k": version},
		Blobs:    []checkpoint.Blob{{Key: "k", Version: version, Kind: checkpoint.Full, Data: json.RawMessage(fmt.Sprint(version))}},
		Created:  time.Now().UTC(),
	}
	ref.ID = parent
	out, err := s.Put(ctx(), ref, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: int(version), Parent: parent})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return out
}

func TestReopenKeepsData(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	s := open(t, dsn, schema)
	ref := checkpoint.Ref{ThreadID: "reopen", Namespace: "ns"}
	c1 := put(t, s, ref, "", 1)
	c2 := put(t, s, ref, c1.ID, 2)
	if err := s.PutWrites(ctx(), c2, "task", []checkpoint.PendingWrite{{Key: "k", Value: json.RawMessage(`"w"`)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Open migrates again (a no-op) and finds everything.
	s2 := open(t, dsn, schema)
	tup, err := s2.Get(ctx(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if tup.Ref != c2 || len(tup.Writes) != 1 || len(tup.Checkpoint.Blobs) != 1 || tup.Metadata.Parent != c1.ID {
		t.Errorf("after reopening, Get = %+v", tup)
	}
	put(t, s2, ref, c2.ID, 3)

	// Each of the two migration steps was recorded once.
	var versions int
	conn, err := pgx.Connect(ctx(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx())
	err = conn.QueryRow(ctx(), `SELECT count(*) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` WHERE component = 'checkpoint'`).Scan(&versions)
	if err != nil || versions != 2 {
		t.Errorf("schema_migrations has %d checkpoint rows (%v), want 2", versions, err)
	}
}

func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(ctx(), dsn, postgres.WithSchema(schema))
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
}

func TestFutureSchemaRefused(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	open(t, dsn, schema).Close()
	conn, err := pgx.Connect(ctx(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx())
	if _, err := conn.Exec(ctx(), `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (component, version) VALUES ('checkpoint', 999)`); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx(), dsn, postgres.WithSchema(schema))
	if err == nil {
		s.Close()
		t.Fatal("Open of a schema at a future version succeeded")
	}
	if !errors.Is(err, pgdb.ErrSchemaTooNew) || !strings.Contains(err.Error(), "999") || !strings.Contains(err.Error(), schema) {
		t.Errorf("Open error = %v; want ErrSchemaTooNew naming version 999 and the schema", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dsn, _ := pgdbtest.Schema(t)
	if s, err := postgres.Open(ctx(), dsn, postgres.WithSchema(strings.Repeat("x", 64))); err == nil {
		s.Close()
		t.Error("Open with a 64-byte schema name succeeded")
	}
	if s, err := postgres.Open(ctx(), "postgres://%zz"); err == nil {
		s.Close()
		t.Error("Open with a malformed DSN succeeded")
	}
}

// TestNewWithPool uses a pool the caller owns; Close leaves it open.
func TestNewWithPool(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	pool, err := pgdb.Connect(ctx(), dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := postgres.New(ctx(), pool)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, checkpoint.Ref{ThreadID: "pool"}, "", 1)
	s.Close()
	if err := pool.Ping(ctx()); err != nil {
		t.Errorf("the pool is unusable after Saver.Close: %v", err)
	}
}

// TestTwoPoolsConflict races writers on two pools, that is two processes'
// worth of connections, against one thread namespace. In every round all
// writers read the same latest checkpoint and put after it: exactly one
// wins, every other gets ErrConflict, and the history is one chain.
func TestTwoPoolsConflict(t *testing.T) {
	const rounds, writers = 10, 8
	dsn, schema := pgdbtest.Schema(t)
	pools := []*postgres.Saver{open(t, dsn, schema), open(t, dsn, schema)}
	ref := checkpoint.Ref{ThreadID: "race", Namespace: "sub"}
	latest, wins := "", []checkpoint.Ref{}
	for round := range rounds {
		start := make(chan struct{})
		results := make([]error, writers)
		refs := make([]checkpoint.Ref, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				s := pools[w%2]
				cp := checkpoint.Checkpoint{
					ID:       checkpoint.NewID(),
					Versions: map[string]uint64{"n": uint64(round + 1)},
					// Every writer carries its own content for the same
					// version: only the winner's may be stored.
					Blobs:   []checkpoint.Blob{{Key: "n", Version: uint64(round + 1), Kind: checkpoint.Full, Data: json.RawMessage(fmt.Sprint(w))}},
					Created: time.Now().UTC(),
				}
				<-start
				refs[w], results[w] = s.Put(ctx(), checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: latest}, cp,
					checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: round, Parent: latest, RunID: fmt.Sprint(w)})
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for w, err := range results {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("round %d: writers %d and %d both won", round, won, w)
			case err == nil:
				won = w
			case !errors.Is(err, checkpoint.ErrConflict):
				t.Fatalf("round %d: writer %d: %v, want ErrConflict", round, w, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no writer won: %v", round, results)
		}
		latest = refs[won].ID
		wins = append(wins, refs[won])

		tup, err := pools[round%2].Get(ctx(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if tup.Ref.ID != latest || string(tup.Checkpoint.Blobs[0].Data) != fmt.Sprint(won) {
			t.Fatalf("round %d: latest is %s with blob %s, want %s with the winner's blob %d", round, tup.Ref.ID, tup.Checkpoint.Blobs[0].Data, latest, won)
		}
	}
	var got []string
	for tup, err := range pools[1].List(ctx(), ref, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tup.Ref.ID)
	}
	if len(got) != rounds {
		t.Fatalf("List has %d checkpoints, want %d", len(got), rounds)
	}
	for i, id := range got {
		if want := wins[rounds-1-i].ID; id != want {
			t.Errorf("List[%d] = %s, want %s", i, id, want)
		}
	}
}

func TestCorruptNamesCheckpoint(t *testing.T) {
	s := newSaver(t)
	ref := checkpoint.Ref{ThreadID: "corrupt-thread", Namespace: "corrupt-ns"}
	c1 := put(t, s, ref, "", 1)
	c2 := put(t, s, ref, c1.ID, 2)
	c3 := put(t, s, ref, c2.ID, 3)
	if err := s.DamageLegacy(c2); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s over a corrupted checkpoint succeeded", what)
		}
		for _, part := range []string{ref.ThreadID, ref.Namespace, c2.ID} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s error %q does not name %q", what, err, part)
			}
		}
		if errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("%s error %q wraps ErrNotFound", what, err)
		}
		if !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("%s error %q does not wrap ErrCorrupt", what, err)
		}
	}
	tup, err := s.Get(ctx(), c2)
	if tup != nil {
		t.Errorf("Get returned a Tuple with its error: %+v", tup)
	}
	check("Get", err)

	// List yields the good newer checkpoint, then the error.
	var ids []string
	var listErr error
	for tup, err := range s.List(ctx(), ref, checkpoint.ListOptions{}) {
		if err != nil {
			listErr = err
			break
		}
		ids = append(ids, tup.Ref.ID)
	}
	if len(ids) != 1 || ids[0] != c3.ID {
		t.Errorf("List before the error yielded %v, want [%s]", ids, c3.ID)
	}
	check("List", listErr)

	// Prune must know what a kept checkpoint needs: it refuses rather
	// than guess, and removes nothing.
	_, err = s.Prune(ctx(), checkpoint.PruneOptions{ThreadID: ref.ThreadID, KeepLatest: 2})
	check("Prune", err)
	for _, c := range []checkpoint.Ref{c1, c3} {
		if _, err := s.Get(ctx(), c); err != nil {
			t.Errorf("Get of a good checkpoint after the failed Prune: %v", err)
		}
	}
}

func TestSizeGrows(t *testing.T) {
	s := newSaver(t)
	before, err := s.Size(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 {
		t.Errorf("Size of empty tables = %d, want > 0 (their indexes take pages)", before)
	}
	ref := checkpoint.Ref{ThreadID: "size"}
	parent := ""
	big := json.RawMessage(`"` + strings.Repeat("x", 4000) + `"`)
	for v := range uint64(200) {
		cp := checkpoint.Checkpoint{
			ID:       checkpoint.NewID(),
			Versions: map[string]uint64{"k": v + 1},
			Blobs:    []checkpoint.Blob{{Key: "k", Version: v + 1, Kind: checkpoint.Full, Data: big}},
			Created:  time.Now(),
		}
		out, err := s.Put(ctx(), checkpoint.Ref{ThreadID: ref.ThreadID, ID: parent}, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop})
		if err != nil {
			t.Fatal(err)
		}
		parent = out.ID
	}
	after, err := s.Size(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("Size after 200 checkpoints = %d, not above %d", after, before)
	}
}

// TestBlobsStoredOnce checks the storage model: a checkpoint that changes
// nothing adds no blob, and Prune collects the blobs no kept checkpoint
// needs.
func TestBlobsStoredOnce(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	s := open(t, dsn, schema)
	ref := checkpoint.Ref{ThreadID: "once"}
	c := put(t, s, ref, "", 1)
	for range 5 {
		cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"k": 1}, Created: time.Now()}
		out, err := s.Put(ctx(), checkpoint.Ref{ThreadID: ref.ThreadID, ID: c.ID}, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop})
		if err != nil {
			t.Fatal(err)
		}
		c = out
	}
	c = put(t, s, ref, c.ID, 2)
	conn, err := pgx.Connect(ctx(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx())
	count := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx(), `SELECT count(*) FROM `+pgx.Identifier{schema, "checkpoint_blobs"}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 2 {
		t.Errorf("%d blobs stored for 7 checkpoints over 2 versions, want 2", n)
	}
	if n, err := s.Prune(ctx(), checkpoint.PruneOptions{ThreadID: ref.ThreadID, KeepLatest: 1}); err != nil || n != 6 {
		t.Errorf("Prune = %d, %v; want 6", n, err)
	}
	if n := count(); n != 1 {
		t.Errorf("%d blobs left after pruning all but the latest checkpoint, want 1", n)
	}
}

// TestCanceledMidway cancels Puts at every point of their run: a Put that
// fails has written nothing, one that succeeds is the new latest. (A COMMIT
// cut off by the context could otherwise take effect and still report an
// error.)
func TestCanceledMidway(t *testing.T) {
	s := newSaver(t)
	ref := checkpoint.Ref{ThreadID: "cancel"}
	latest := put(t, s, ref, "", 1)
	failed, succeeded := 0, 0
	for i := 0; i < 80 && succeeded < 3; i++ {
		c, cancel := context.WithTimeout(ctx(), 200*time.Microsecond+time.Duration(i)*25*time.Microsecond)
		v := uint64(i + 2)
		cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"k": v},
			Blobs: []checkpoint.Blob{{Key: "k", Version: v, Kind: checkpoint.Full, Data: json.RawMessage(`2`)}}, Created: time.Now()}
		out, err := s.Put(c, latest, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop})
		cancel()
		switch {
		case err == nil:
			succeeded++
			latest = out
		case errors.Is(err, context.DeadlineExceeded):
			failed++
		default:
			t.Fatalf("Put with a deadline: %v", err)
		}
		tup, err := s.Get(ctx(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if tup.Ref != latest {
			t.Fatalf("after Put %d, the latest checkpoint is %s, want %s", i, tup.Ref.ID, latest.ID)
		}
	}
	t.Logf("%d Puts failed on their deadline, %d succeeded", failed, succeeded)
}
