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
// conformance suite checks that PutOwned keeps every rule Put keeps.
type owned struct{ corruptible }

func (o owned) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	cp, md = checkpoint.CloneForPut(cp, md)
	return o.Memory.PutOwned(ctx, ref, cp, md)
}

func TestMemoryPutOwned(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return owned{corruptible{checkpoint.NewMemory()}} })
}

// TestMemoryPutOwnedDoesNotCopy checks what PutOwned is for: it stores a
// step's checkpoint with fewer allocations than Put, which copies it.
func TestMemoryPutOwnedDoesNotCopy(t *testing.T) {
	ctx := context.Background()
	allocs := func(put func(*checkpoint.Memory, checkpoint.Ref, checkpoint.Checkpoint, checkpoint.Metadata) error) float64 {
		m := checkpoint.NewMemory()
		head := ""
		return testing.AllocsPerRun(200, func() {
			id := checkpoint.NewID()
			cp := checkpoint.Checkpoint{ID: id, Versions: map[string]uint64{"k": 1 << 32}, Created: time.Now(),
				Blobs: []checkpoint.Blob{{Key: "k", Version: 1 << 32, Kind: checkpoint.Full, Data: []byte("1")}},
				Next:  []checkpoint.Task{{ID: "t", Node: "n", Path: "node:n"}}}
			if err := put(m, checkpoint.Ref{ThreadID: "t", ID: head}, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop}); err != nil {
				t.Fatal(err)
			}
			head = id
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
	// Put copies the versions map (two allocations), the blobs, their data
	// and the tasks: PutOwned saves at least four.
	t.Logf("allocations per Put: %.1f copied, %.1f handed over", copied, handed)
	if handed > copied-4 {
		t.Errorf("PutOwned allocates %.1f times a checkpoint, Put %.1f; want at least 4 fewer", handed, copied)
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
