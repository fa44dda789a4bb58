package transfer

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/store"
	stsqlite "github.com/trellis-agents/trellis/store/sqlite"
)

// hidden hides a Saver's Exporter methods.
type hidden struct{ checkpoint.Saver }

// A side whose stores cannot be exported or imported is refused before
// anything is written, with an error naming which store it is.
func TestRefusesStoresWithoutExport(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	d, err := dbsqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := stsqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mem := checkpoint.NewMemory()
	good := Side{DB: d, Saver: mem, Store: st}
	cases := []struct {
		src, dst Side
		want     string
	}{
		{Side{Saver: mem, Store: st}, good, "source's store of record"},
		{Side{DB: d, Saver: hidden{mem}, Store: st}, good, "source's checkpoint saver"},
		{Side{DB: d, Saver: mem, Store: store.NewMemory()}, good, "source's store"},
		{good, Side{DB: d, Saver: mem, Store: store.NewMemory()}, "target's store"},
	}
	for _, c := range cases {
		_, err := Run(ctx, c.src, c.dst, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming the %s", err, c.want)
		}
	}
	// A dry run does not need the target.
	if rep, err := Run(ctx, good, Side{}, Options{DryRun: true}); err != nil || len(rep.Tables) == 0 {
		t.Errorf("dry run: %+v %v", rep, err)
	}
}

// openSide opens a store of record and a store on a new SQLite file, with
// saver as the checkpoint saver.
func openSide(t *testing.T, saver checkpoint.Saver) Side {
	t.Helper()
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "side.db")
	d, err := dbsqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	st, err := stsqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return Side{DB: d, Saver: saver, Store: st}
}

// putOne puts one checkpoint after head in thread and returns its ID.
func putOne(t *testing.T, s checkpoint.Saver, thread, head string) string {
	t.Helper()
	cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"k": 1},
		Blobs: []checkpoint.Blob{{Key: "k", Version: 1, Kind: checkpoint.Full, Data: []byte(`1`)}}}
	if _, err := s.Put(context.Background(), checkpoint.Ref{ThreadID: thread, ID: head}, cp, checkpoint.Metadata{Source: checkpoint.SourceInput}); err != nil {
		t.Fatal(err)
	}
	return cp.ID
}

// Twenty threads copy through the workers; one whose target history
// differs stops the transfer with ErrDiverged, the others' copies stand,
// and running again after removing the bad target thread finishes it.
func TestWorkersStopOnDivergedThread(t *testing.T) {
	ctx := context.Background()
	srcSaver, dstSaver := checkpoint.NewMemory(), checkpoint.NewMemory()
	for i := range 20 {
		th := string(rune('a'+i)) + "-thread"
		head := putOne(t, srcSaver, th, "")
		putOne(t, srcSaver, th, head)
	}
	putOne(t, dstSaver, "k-thread", "") // not the source's
	src, dst := openSide(t, srcSaver), openSide(t, dstSaver)
	_, err := Run(ctx, src, dst, Options{Workers: 3, Batch: 4})
	if !errors.Is(err, checkpoint.ErrDiverged) || !strings.Contains(err.Error(), "k-thread") {
		t.Fatalf("error %v, want ErrDiverged naming k-thread", err)
	}
	if err := dstSaver.DeleteThread(ctx, "k-thread"); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, src, dst, Options{Workers: 3, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Threads != 20 || rep.Checkpoints.Total != 40 || rep.Checkpoints.Copied == 0 {
		t.Errorf("second run: %+v", rep)
	}
	for i := range 20 {
		th := string(rune('a'+i)) + "-thread"
		ids, err := dstSaver.CheckpointIDs(ctx, checkpoint.Ref{ThreadID: th}, 10)
		if err != nil || len(ids) != 2 {
			t.Errorf("%s on the target: %v %v", th, ids, err)
		}
	}
}
