package checkpoint

import (
	"context"
	"fmt"
)

var _ Remover = (*Memory)(nil)

// RemoveCheckpoints removes the named checkpoints of ref's thread namespace
// with their pending writes and the blobs no remaining checkpoint needs;
// the namespace's latest checkpoint is never removed. See Remover.
func (m *Memory) RemoveCheckpoints(ctx context.Context, ref Ref, ids []string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if ref.ThreadID == "" {
		return 0, errEmptyThread
	}
	if len(ids) == 0 {
		return 0, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.threads[ref.ThreadID][ref.Namespace]
	if ns == nil {
		return 0, nil
	}
	drop := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id == "" {
			return 0, fmt.Errorf("checkpoint: remove checkpoints of %s: an ID is empty", ref)
		}
		drop[id] = true
	}
	last := len(ns.cps) - 1
	removed := ns.remove(func(i int, c *memCheckpoint) bool { return drop[c.id] && i != last })
	if removed > 0 {
		ns.collect()
	}
	return removed, nil
}
