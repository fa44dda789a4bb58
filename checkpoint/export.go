package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Exporter is an optional interface of a Saver that can enumerate what it
// holds, so that every thread can be copied to another Saver (CopyTo;
// `trellis transfer`). Each method pages, so a caller's memory stays bounded
// by the page size whatever the Saver holds. The savers of packages
// checkpoint/sqlite, checkpoint/postgres and checkpoint/redis and Memory implement it; the
// conformance suite checks every Saver that does.
type Exporter interface {
	// Threads returns, in ascending byte order, up to limit IDs of threads
	// holding at least one checkpoint, those after after ("" from the
	// first). limit must be positive.
	Threads(ctx context.Context, after string, limit int) ([]string, error)
	// Namespaces returns the namespaces of thread holding checkpoints, in
	// ascending byte order ("", the root graph's, first); none for an
	// unknown thread.
	Namespaces(ctx context.Context, thread string) ([]string, error)
	// CheckpointIDs returns up to limit IDs of the checkpoints of ref's
	// thread namespace, oldest first, those after ref.ID ("" from the
	// oldest). limit must be positive.
	CheckpointIDs(ctx context.Context, ref Ref, limit int) ([]string, error)
}

// ErrDiverged means CopyTo found, in the target, a checkpoint the source
// does not have in the same namespace: the target is not an earlier copy
// of the source, so nothing is copied into that namespace.
var ErrDiverged = errors.New("checkpoint: the target thread namespace has checkpoints the source does not have")

// CopyStats counts what CopyTo did.
type CopyStats struct {
	Namespaces  int // thread namespaces visited
	Checkpoints int // checkpoints written to the target
	Skipped     int // checkpoints the target had already
	Writes      int // pending writes written (a task's writes are replaced as a whole)
}

// copyPage is how many checkpoint IDs CopyTo reads at a time.
const copyPage = 256

// CopyTo copies every namespace, checkpoint, blob and pending write of
// thread from src to dst, keeping checkpoint IDs, metadata and creation
// times, so dst answers Get and List as src does. It is re-runnable: in a
// namespace where dst already has checkpoints, the newest of them must be
// a checkpoint of src (else the error wraps ErrDiverged), and only src's
// later checkpoints are put, after the pending writes of the ones dst has
// are written again (PutWrites replaces a task's writes, so nothing is
// doubled). A copy interrupted half way is thus finished by running it
// again.
//
// Memory: one page of checkpoint IDs, one checkpoint with its blob chains
// and writes, and the set of blob versions already sent in the namespace
// being copied (a key and a version each).
func CopyTo(ctx context.Context, src interface {
	Saver
	Exporter
}, dst Saver, thread string) (CopyStats, error) {
	var st CopyStats
	nss, err := src.Namespaces(ctx, thread)
	if err != nil {
		return st, fmt.Errorf("checkpoint: copy %s: list namespaces: %w", Ref{ThreadID: thread}, err)
	}
	for _, ns := range nss {
		st.Namespaces++
		if err := copyNamespace(ctx, src, dst, Ref{ThreadID: thread, Namespace: ns}, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

func copyNamespace(ctx context.Context, src interface {
	Saver
	Exporter
}, dst Saver, ref Ref, st *CopyStats) error {
	head := ""
	switch t, err := dst.Get(ctx, ref); {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return fmt.Errorf("checkpoint: copy %s: read the target's latest checkpoint: %w", ref, err)
	default:
		head = t.Ref.ID
		if _, err := src.Get(ctx, Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: head}); errors.Is(err, ErrNotFound) {
			return fmt.Errorf("checkpoint: copy %s: the target's latest checkpoint %s is not in the source: %w", ref, head, ErrDiverged)
		} else if err != nil {
			return fmt.Errorf("checkpoint: copy %s: %w", ref, err)
		}
	}
	sent := make(map[blobID]bool)
	after := ""
	for {
		ids, err := src.CheckpointIDs(ctx, Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: after}, copyPage)
		if err != nil {
			return fmt.Errorf("checkpoint: copy %s: list checkpoints: %w", ref, err)
		}
		for _, id := range ids {
			one := Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: id}
			t, err := src.Get(ctx, one)
			if err != nil {
				return fmt.Errorf("checkpoint: copy: read %w", err)
			}
			if head != "" && id <= head {
				// dst has it; its writes may have changed since.
				st.Skipped++
			} else {
				cp := t.Checkpoint
				cp.Blobs = slices.DeleteFunc(slices.Clone(cp.Blobs), func(b Blob) bool { return sent[blobID{b.Key, b.Version}] })
				if _, err := dst.Put(ctx, Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: head}, cp, t.Metadata); err != nil {
					return fmt.Errorf("checkpoint: copy: write %s: %w", one, err)
				}
				head = id
				st.Checkpoints++
			}
			for _, b := range t.Checkpoint.Blobs {
				sent[blobID{b.Key, b.Version}] = true
			}
			for i := 0; i < len(t.Writes); {
				j := i
				for j < len(t.Writes) && t.Writes[j].TaskID == t.Writes[i].TaskID {
					j++
				}
				if err := dst.PutWrites(ctx, one, t.Writes[i].TaskID, t.Writes[i:j]); err != nil {
					return fmt.Errorf("checkpoint: copy: write the pending writes of task %s after %s: %w", t.Writes[i].TaskID, one, err)
				}
				st.Writes += j - i
				i = j
			}
		}
		if len(ids) < copyPage {
			return nil
		}
		after = ids[len(ids)-1]
	}
}
