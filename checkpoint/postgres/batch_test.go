package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// TestPutBatchStatements: a batch of checkpoints with blobs is three
// statements whatever its length — the heads row's move, one INSERT of the
// blobs, one of the checkpoint rows — sent in one round trip, and reads
// back as Puts would have stored it.
func TestPutBatchStatements(t *testing.T) {
	ctx := context.Background()
	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	defer stop()
	s := newSaver(t) // observed from its pool's start
	ref := checkpoint.Ref{ThreadID: "t"}
	entries := func(parent string, first uint64, n int) []checkpoint.Entry {
		var es []checkpoint.Entry
		for i := range n {
			id := checkpoint.NewID()
			v := first + uint64(i)
			es = append(es, checkpoint.Entry{
				Checkpoint: checkpoint.Checkpoint{ID: id, Versions: map[string]uint64{"k": v},
					Blobs: []checkpoint.Blob{{Key: "k", Version: v, Kind: checkpoint.Full, Data: []byte(`"v"`)}}},
				Metadata: checkpoint.Metadata{Parent: parent, Step: i - 1, Source: checkpoint.SourceLoop},
			})
			parent = id
		}
		return es
	}
	for _, n := range []int{2, 9} {
		es := entries(ref.ID, uint64(len(ref.ID)+1)*100, n)
		rec.Take()
		last, err := s.PutBatch(ctx, ref, es)
		if err != nil {
			t.Fatalf("PutBatch of %d: %v", n, err)
		}
		var stmts []string
		for _, tx := range rec.Take() {
			for _, st := range tx.Stmts {
				f := strings.Fields(st.SQL)
				if len(f) < 3 || f[0] == "BEGIN" || f[0] == "COMMIT" {
					continue
				}
				stmts = append(stmts, f[0]+" "+f[1]+" "+f[2])
			}
		}
		want := "heads, blobs, checkpoints"
		if ref.ID == "" {
			if len(stmts) != 3 || stmts[0] != "INSERT INTO checkpoint_heads" || stmts[1] != "INSERT INTO checkpoint_blobs" || stmts[2] != "INSERT INTO checkpoints" {
				t.Errorf("a batch of %d checkpoints ran %q, want %s", n, stmts, want)
			}
		} else if len(stmts) != 3 || stmts[0] != "UPDATE checkpoint_heads SET" || stmts[1] != "INSERT INTO checkpoint_blobs" || stmts[2] != "INSERT INTO checkpoints" {
			t.Errorf("a batch of %d checkpoints after the first ran %q, want %s", n, stmts, want)
		}
		for _, e := range es {
			tu, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t", ID: e.Checkpoint.ID})
			if err != nil || tu.Metadata.Parent != e.Metadata.Parent || tu.Checkpoint.Versions["k"] != e.Checkpoint.Versions["k"] {
				t.Errorf("Get %s after the batch: %+v, %v", e.Checkpoint.ID, tu, err)
			}
		}
		if tu, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t"}); err != nil || tu.Ref != last {
			t.Errorf("latest after a batch of %d: %+v, %v; want %s", n, tu.Ref, err, last)
		}
		ref = last
	}
}
