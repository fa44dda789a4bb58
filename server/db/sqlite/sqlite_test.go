package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/dbtest"
	"github.com/trellis-agents/trellis/server/db/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func open(t testing.TB, path string) *sqlite.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// TestSuite runs the conformance suite with a new file per subtest.
func TestSuite(t *testing.T) {
	dbtest.Run(t, func(t *testing.T) db.DB {
		return open(t, filepath.Join(t.TempDir(), "sub", "trellis.db"))
	})
}

// TestSuiteShared runs the suite against one file shared by every
// subtest, as a long-lived service uses it.
func TestSuiteShared(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "trellis.db"))
	dbtest.Run(t, func(t *testing.T) db.DB { return d })
}

// BenchmarkRunCycle: ClaimRun + AppendEvents(10) + FinishRun on a file.
func BenchmarkRunCycle(b *testing.B) {
	dbtest.BenchmarkRunCycle(b, open(b, filepath.Join(b.TempDir(), "bench.db")))
}

// BenchmarkThreadCalls: GetThread + SearchThreads + UpdateThreadMetadata.
func BenchmarkThreadCalls(b *testing.B) {
	dbtest.BenchmarkThreadCalls(b, open(b, filepath.Join(b.TempDir(), "bench.db")))
}

// BenchmarkImportRows: ImportRows of 500 threads in one transaction.
func BenchmarkImportRows(b *testing.B) {
	dbtest.BenchmarkImportRows(b, open(b, filepath.Join(b.TempDir(), "bench.db")))
}
