package bench

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
)

// saverKind opens a fresh, empty saver of one backend for a benchmark.
type saverKind struct {
	name string
	open func(b *testing.B) (checkpoint.Saver, func())
}

// savers lists the backends the storage benchmarks run on. PostgreSQL and
// Redis join when their test variables are set (see internal/testenv).
func savers() []saverKind {
	out := []saverKind{
		{"memory", func(*testing.B) (checkpoint.Saver, func()) { return checkpoint.NewMemory(), func() {} }},
		{"sqlite", func(b *testing.B) (checkpoint.Saver, func()) {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "threads.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s, func() { s.Close() }
		}},
	}
	return append(out, serviceSavers()...)
}
