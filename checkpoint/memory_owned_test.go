package checkpoint_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/checkpointtest"
)

// owned is a Memory whose Put hands a private copy over to PutOwned, so the
// conformance suite checks that PutOwned keeps every rule Put keeps. It
// then scribbles over the versions map and the blob and task slices, which
// PutOwned lets its caller reuse: a Memory that kept them fails the suite.
type owned struct{ corruptible }

func (o owned) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	cp, md = checkpoint.CloneForPut(cp, md)
	out, err := o.Memory.PutOwned(ctx, ref, cp, md)
	for k := range cp.Versions {
		cp.Versions[k] = 1<<64 - 1
	}
	for i := range cp.Blobs {
		cp.Blobs[i] = checkpoint.Blob{Key: "reused", Version: 1}
	}
	for i := range cp.Next {
		cp.Next[i] = checkpoint.Task{ID: "reused", Node: "reused"}
	}
	return out, err
}

// PutWrites hands a private copy of the values over to PutWritesOwned and
// then scribbles over the writes slice, which Memory must not keep.
func (o owned) PutWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	ws := make([]checkpoint.PendingWrite, len(writes))
	for i, w := range writes {
		w.Value = append([]byte(nil), w.Value...)
		ws[i] = w
	}
	err := o.Memory.PutWritesOwned(ctx, ref, taskID, ws)
	for i := range ws {
		ws[i] = checkpoint.PendingWrite{TaskID: "reused", Key: "reused", Value: []byte(`"reused"`)}
	}
	return err
}

// ownedVersions is owned with the versions handed to PutOwnedVersions as a
// slice, which it then scribbles over, as the engine reuses it.
type ownedVersions struct{ owned }

func (o ownedVersions) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	cp, md = checkpoint.CloneForPut(cp, md)
	var vers []checkpoint.KeyVersion
	for k, v := range cp.Versions {
		vers = append(vers, checkpoint.KeyVersion{Key: k, Version: v})
	}
	cp.Versions = nil
	out, err := o.Memory.PutOwnedVersions(ctx, ref, cp, vers, md)
	for i := range vers {
		vers[i] = checkpoint.KeyVersion{Key: "reused", Version: 1<<64 - 1}
	}
	for i := range cp.Blobs {
		cp.Blobs[i] = checkpoint.Blob{Key: "reused", Version: 1}
	}
	return out, err
}

func TestMemoryPutOwnedVersions(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return ownedVersions{owned{corruptible{checkpoint.NewMemory()}}}
	})
	ctx := context.Background()
	m := checkpoint.NewMemory()
	cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"a": 1}}
	if _, err := m.PutOwnedVersions(ctx, checkpoint.Ref{ThreadID: "t"}, cp, []checkpoint.KeyVersion{{Key: "b", Version: 1}}, checkpoint.Metadata{}); err == nil {
		t.Error("PutOwnedVersions took versions both as a map and as a slice")
	}
	cp.Versions = nil
	if _, err := m.PutOwnedVersions(ctx, checkpoint.Ref{ThreadID: "t"}, cp, []checkpoint.KeyVersion{{Version: 1}}, checkpoint.Metadata{}); err == nil {
		t.Error("PutOwnedVersions took a version with an empty key")
	}
}

func TestMemoryPutOwned(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return owned{corruptible{checkpoint.NewMemory()}} })
}

// TestMemoryPutOwnedDoesNotCopy checks what PutOwned and Memory's slabs are
// for: Memory stores a step's checkpoint (one blob, one task) with less
// than one allocation of its own on average (AllocsPerRun rounds down, so
// 0), and Put with one more
// (its copy of the blob's data), where each cost three to four more before
// (the stored checkpoint, the versions map, the task list).
func TestMemoryPutOwnedDoesNotCopy(t *testing.T) {
	ctx := context.Background()
	const runs = 400
	allocs := func(put func(*checkpoint.Memory, checkpoint.Ref, checkpoint.Checkpoint, checkpoint.Metadata) error) float64 {
		m := checkpoint.NewMemory()
		// Built beforehand: only what Memory allocates is counted.
		cps := make([]checkpoint.Checkpoint, runs+1)
		for i := range cps {
			cps[i] = checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"k": uint64(i+1) << 32}, Created: time.Now(),
				Blobs: []checkpoint.Blob{{Key: "k", Version: uint64(i+1) << 32, Kind: checkpoint.Full, Data: []byte("1")}},
				Next:  []checkpoint.Task{{ID: "t", Node: "n", Path: "node:n"}}}
		}
		head, i := "", 0
		return testing.AllocsPerRun(runs, func() {
			cp := cps[i]
			i++
			if err := put(m, checkpoint.Ref{ThreadID: "t", ID: head}, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop}); err != nil {
				t.Fatal(err)
			}
			head = cp.ID
		})
	}
	copied := allocs(func(m *checkpoint.Memory, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) error {
		_, err := m.Put(ctx, ref, cp, md)
		return err
	})
	handed := allocs(func(m *checkpoint.Memory, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) error {
		_, err := m.PutOwned(ctx, ref, cp, md)
		return err
	})
	t.Logf("allocations per Put: %.2f copied, %.2f handed over", copied, handed)
	if handed >= 1 {
		t.Errorf("PutOwned allocates %.2f times a checkpoint; want under 1 (slabs and index growth only)", handed)
	}
	if copied > handed+1 {
		t.Errorf("Put allocates %.2f times a checkpoint, PutOwned %.2f; want at most one more (the blob's data)", copied, handed)
	}
}

// TestMemoryNotFound checks the not-found error's message and identity.
func TestMemoryNotFound(t *testing.T) {
	m := checkpoint.NewMemory()
	ref := checkpoint.Ref{ThreadID: "t", Namespace: "a|b"}
	_, err := m.Get(context.Background(), ref)
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if want := ref.String() + ": " + checkpoint.ErrNotFound.Error(); err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}
