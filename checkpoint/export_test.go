package checkpoint

import (
	"errors"
	"fmt"
)

// ErrDamageNotApplicable is what CorruptMemory returns for a kind of damage
// that cannot happen to Memory (it keeps no encoded checkpoint rows).
var ErrDamageNotApplicable = errors.New("this damage does not apply to the in-memory saver")

// CorruptMemory damages what m stores for the conformance suite's Corrupter
// (see checkpointtest.Damage for the kinds). Memory keeps Go values, not
// bytes: a checkpoint payload replaced by "{}" or "null" becomes the zero
// Checkpoint but for its ID, which is also the namespace's index, and its
// metadata names the checkpoint as its own parent (what Validate rejects of
// a row that decodes to nothing); a flipped byte of a checkpoint row cannot happen to a value
// that is never encoded, so that kind returns ErrDamageNotApplicable.
func CorruptMemory(m *Memory, ref Ref, kind, key string, version uint64, task string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.threads[ref.ThreadID][ref.Namespace]
	c := ns.get(ref.ID)
	if c == nil {
		return fmt.Errorf("corrupt %s: no such checkpoint", ref)
	}
	switch kind {
	case "checkpoint-empty-object", "checkpoint-null":
		writes := c.writes()
		c.set(Checkpoint{ID: c.id}, nil, Metadata{Parent: c.id})
		c.setWrites(writes)
	case "blob-flip":
		b, ok := ns.blobs.get(key, version)
		if !ok || len(b.Data) == 0 {
			return fmt.Errorf("corrupt %s: no blob %q version %d with data", ref, key, version)
		}
		b.Data = flip(b.Data)
		ns.blobs.set(b)
	case "write-flip":
		ws := c.writes()[task]
		if len(ws) == 0 || len(ws[0].Value) == 0 {
			return fmt.Errorf("corrupt %s: no write of task %q with a value", ref, task)
		}
		ws[0].Value = flip(ws[0].Value)
	case "checkpoint-flip":
		return ErrDamageNotApplicable
	default:
		return fmt.Errorf("corrupt %s: unknown damage %q", ref, kind)
	}
	return nil
}

// flip returns a copy of data with its last byte's lowest bit flipped.
func flip(data []byte) []byte {
	out := append([]byte(nil), data...)
	out[len(out)-1] ^= 1
	return out
}
