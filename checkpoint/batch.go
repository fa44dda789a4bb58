package checkpoint

import (
	"context"
	"errors"
	"fmt"
)

// Entry is one checkpoint of a PutBatch call, with its metadata.
type Entry struct {
	Checkpoint Checkpoint
	Metadata   Metadata
}

// BatchPutter is implemented by a Saver that can store several successive
// checkpoints of one thread namespace in one transaction: a run's
// pre-input checkpoint and the checkpoint of its input's step are then one
// write, not two.
//
// PutBatch stores entries as that many Puts would, one after the other:
// the first after the checkpoint ref.ID names (the namespace's latest as
// the writer read it, see Saver.Put and ErrConflict), each later one after
// the entry before it, so each entry's ID must sort after the previous
// one's. It returns the reference of the last entry. Either every entry is
// stored or, on an error, none is. A Saver that runs the context's
// transaction hook (package internal/txhook) runs it once, in the batch's
// transaction. An empty batch is an error. A Saver that wraps another
// returns an error wrapping errors.ErrUnsupported when the one it wraps
// cannot store batches; the caller then calls Put for each entry.
type BatchPutter interface {
	PutBatch(ctx context.Context, ref Ref, entries []Entry) (Ref, error)
}

// CheckBatch checks what every saver checks of a PutBatch call before
// storing anything: a thread, at least one entry, non-empty IDs growing
// from one entry to the next, and each entry's blobs as Put checks them.
// Savers share it.
func CheckBatch(ref Ref, entries []Entry) error {
	if ref.ThreadID == "" {
		return errEmptyThread
	}
	if len(entries) == 0 {
		return fmt.Errorf("checkpoint: put batch in %s: the batch is empty; give it at least one checkpoint", ref)
	}
	for i, e := range entries {
		out := Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: e.Checkpoint.ID}
		if e.Checkpoint.ID == "" {
			return fmt.Errorf("checkpoint: put batch in %s: the ID of checkpoint %d is empty; assign one with NewID", ref, i)
		}
		if i > 0 && e.Checkpoint.ID <= entries[i-1].Checkpoint.ID {
			return fmt.Errorf("checkpoint: put batch %s: the ID does not sort after the batch's previous checkpoint %s; IDs must grow (use NewID)", out, entries[i-1].Checkpoint.ID)
		}
		if _, err := CheckBlobs(e.Checkpoint.Blobs); err != nil {
			return fmt.Errorf("checkpoint: put %s: %w", out, err)
		}
	}
	return nil
}

// PutAll stores entries with s: in one PutBatch when s is a BatchPutter
// that can, else with one Put each (not atomic then). It returns the
// reference of the last entry stored.
func PutAll(ctx context.Context, s Saver, ref Ref, entries []Entry) (Ref, error) {
	if b, ok := s.(BatchPutter); ok {
		out, err := b.PutBatch(ctx, ref, entries)
		if !errors.Is(err, errors.ErrUnsupported) {
			return out, err
		}
	}
	if err := CheckBatch(ref, entries); err != nil {
		return Ref{}, err
	}
	for _, e := range entries {
		out, err := s.Put(ctx, ref, e.Checkpoint, e.Metadata)
		if err != nil {
			return Ref{}, err
		}
		ref = out
	}
	return ref, nil
}

// PutBatch stores entries under one lock (BatchPutter): another reader
// sees none of them or all.
func (m *Memory) PutBatch(ctx context.Context, ref Ref, entries []Entry) (Ref, error) {
	if err := ctx.Err(); err != nil {
		return Ref{}, err
	}
	if err := CheckBatch(ref, entries); err != nil {
		return Ref{}, err
	}
	for _, e := range entries {
		if err := m.checkSizes(&ref, &e.Checkpoint, 0, &e.Metadata); err != nil {
			return Ref{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.threads[ref.ThreadID][ref.Namespace]
	// Each entry is checked against the namespace as the entries before it
	// would have left it, and the blobs among the entries against each
	// other, before anything is stored.
	batch := map[blobID]Blob{}
	at := ref
	for i, e := range entries {
		out := Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: e.Checkpoint.ID}
		latest := at.ID
		if i == 0 {
			latest = ""
			if ns != nil {
				latest = ns.latest()
			}
		}
		if _, err := m.checkPut(ns, &at, latest, &e.Checkpoint); err != nil {
			return Ref{}, err
		}
		for _, b := range e.Checkpoint.Blobs {
			if old, ok := batch[blobID{b.Key, b.Version}]; ok && !old.Equal(b) {
				return Ref{}, fmt.Errorf("checkpoint: put %s: key %q version %d is already stored with other content; blob versions must not be reused", out, b.Key, b.Version)
			}
			batch[blobID{b.Key, b.Version}] = b
		}
		at = out
	}
	for _, e := range entries {
		ns = m.store(&ref, ns, &e.Checkpoint, nil, &e.Metadata, false, nil)
	}
	return at, nil
}
