package transfer

import (
	"context"
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
