package checkpoint

import (
	"context"
	"fmt"
)

// The in-memory saver's Puts for the engine, which hands over what it
// built for one Put (see PutOwned), and their helpers.

// KeyVersion is one entry of a checkpoint's versions: a key and the
// version in force. See Memory.PutOwnedVersions.
type KeyVersion struct {
	Key     string
	Version uint64
}

// PutOwnedVersions is PutOwned for a checkpoint whose versions come as a
// slice, vers, instead of the cp.Versions map, which must be empty: the
// engine builds a step's versions in a slice it reuses, and filling,
// walking and clearing a map cost about a tenth of a step saved in memory.
// The keys must be distinct. Memory copies vers and does not keep it. It
// is not part of Saver.
func (m *Memory) PutOwnedVersions(ctx context.Context, ref Ref, cp Checkpoint, vers []KeyVersion, md Metadata) (Ref, error) {
	if len(cp.Versions) > 0 {
		return Ref{}, errBothVersions(&ref, &cp)
	}
	return putOut(&ref, &cp, m.put(ctx, &ref, &cp, vers, &md, true))
}

// PutStep is PutOwnedVersions taking the reference, the checkpoint and
// its metadata by pointer and returning only the error (the reference of
// the checkpoint stored is ref's thread and namespace with cp.ID): Memory
// neither changes nor keeps *ref, *cp and *md themselves, only what their
// fields hold, as PutOwnedVersions does. The engine's save calls it, which
// spares it copying the structs (240 bytes) on the way at every step. It
// is not part of Saver.
func (m *Memory) PutStep(ctx context.Context, ref *Ref, cp *Checkpoint, vers []KeyVersion, md *Metadata) error {
	if len(cp.Versions) > 0 {
		return errBothVersions(ref, cp)
	}
	return m.put(ctx, ref, cp, vers, md, true)
}

func errBothVersions(ref *Ref, cp *Checkpoint) error {
	return fmt.Errorf("checkpoint: put %s: versions given both as a map and as a slice", putRef(ref, cp))
}

// putRef returns the reference of checkpoint cp put after ref.
func putRef(ref *Ref, cp *Checkpoint) Ref {
	return Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: cp.ID}
}

// putOut returns what Put returns after put returned err.
func putOut(ref *Ref, cp *Checkpoint, err error) (Ref, error) {
	if err != nil {
		return Ref{}, err
	}
	return putRef(ref, cp), nil
}

// checkPutBlobs is CheckBlobs for Put, which does not use the list
// without repeats: a step's one blob is checked without a call.
func checkPutBlobs(blobs []Blob) error {
	if len(blobs) == 1 {
		return checkBlob(&blobs[0])
	}
	_, err := CheckBlobs(blobs)
	return err
}
