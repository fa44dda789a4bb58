package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// TestPutBatchStatements: a batch of two checkpoints with blobs is one
// INSERT of the checkpoint rows and one of the blobs, as many statements as
// one Put, on the single write connection every writer waits for; a batch
// longer than maxBatchRows is stored one checkpoint at a time and reads
// back the same.
func TestPutBatchStatements(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "cp.db"))
	ref := checkpoint.Ref{ThreadID: "t"}
	entries := func(n int) []checkpoint.Entry {
		var es []checkpoint.Entry
		parent := ref.ID
		for i := range n {
			id := checkpoint.NewID()
			v := uint64(len(es) + 1)
			es = append(es, checkpoint.Entry{
				Checkpoint: checkpoint.Checkpoint{ID: id, Versions: map[string]uint64{"k": v},
					Blobs: []checkpoint.Blob{{Key: "k", Version: v, Kind: checkpoint.Full, Data: []byte(`"v"`)}}},
				Metadata: checkpoint.Metadata{Parent: parent, Step: i - 1, Source: checkpoint.SourceLoop},
			})
			parent = id
		}
		return es
	}

	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	es := entries(2)
	last, err := s.PutBatch(ctx, ref, es)
	stop()
	if err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	var stmts []string
	for _, tx := range rec.Take() {
		for _, st := range tx.Stmts {
			stmts = append(stmts, strings.Fields(st.SQL)[0]+" "+strings.Fields(st.SQL)[2])
		}
	}
	if len(stmts) != 2 || stmts[0] != "INSERT checkpoints" || stmts[1] != "INSERT blobs" {
		t.Errorf("a batch of two checkpoints ran %d statements %q, want one INSERT of checkpoints and one of blobs", len(stmts), stmts)
	}
	for _, e := range es {
		tu, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t", ID: e.Checkpoint.ID})
		if err != nil || tu.Metadata.Parent != e.Metadata.Parent || tu.Checkpoint.Versions["k"] != e.Checkpoint.Versions["k"] {
			t.Errorf("Get %s after the batch: %+v, %v", e.Checkpoint.ID, tu, err)
		}
	}

	// Longer than one statement carries: one checkpoint at a time.
	long := entries(maxBatchRows + 1)
	long[0].Metadata.Parent = last.ID
	for i := range long {
		long[i].Checkpoint.Versions["k"] += 2
		long[i].Checkpoint.Blobs[0].Version += 2
	}
	end, err := s.PutBatch(ctx, last, long)
	if err != nil {
		t.Fatalf("PutBatch of %d: %v", len(long), err)
	}
	tu, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t"})
	if err != nil || tu.Ref != end || tu.Metadata.Parent != long[len(long)-2].Checkpoint.ID {
		t.Errorf("latest after a long batch: %+v, %v; want %s", tu, err, end)
	}
}
