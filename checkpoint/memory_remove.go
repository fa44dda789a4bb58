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

// DeleteThread removes the thread with all its namespaces, checkpoints,
// blobs and writes. Deleting a missing thread returns nil.
func (m *Memory) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errEmptyThread
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetNamespace()
	delete(m.threads, threadID)
	return nil
}

// DeleteRun removes every checkpoint of thread threadID written by run
// runID (Metadata.RunID), in every namespace, with their pending writes and
// the blobs no remaining checkpoint needs; see checkpoint.Saver. A namespace
// left without checkpoints is removed. It returns how many checkpoints it
// removed.
func (m *Memory) DeleteRun(ctx context.Context, threadID, runID string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if threadID == "" {
		return 0, errEmptyThread
	}
	if runID == "" {
		return 0, fmt.Errorf("checkpoint: delete run in %s: run ID is empty", Ref{ThreadID: threadID})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetNamespace() // it may remove namespaces
	removed := 0
	nss := m.threads[threadID]
	for name, ns := range nss {
		n := ns.remove(func(_ int, c *memCheckpoint) bool { return c.runID == runID })
		if n == 0 {
			continue
		}
		removed += n
		if len(ns.cps) == 0 {
			delete(nss, name)
			continue
		}
		ns.collect()
	}
	if len(nss) == 0 {
		delete(m.threads, threadID)
	}
	return removed, nil
}

// namespace returns thread's namespace name, nil when there is none, and
// remembers it: a run's Puts go to one namespace one after the other, and
// the two map lookups (hashing the thread and the namespace) were about a
// twentieth of a step saved in memory. Only Put calls it, with mu held for
// writing; every method that takes a namespace out of threads (DeleteThread,
// DeleteRun, and CopyThread, which puts one in) forgets it first, so the
// remembered namespace is always the one threads holds
// (TestMemoryRemembersNamespaceSafely).
func (m *Memory) namespace(thread, name string) *memNamespace {
	if m.lastNS != nil && m.lastThread == thread && m.lastName == name {
		return m.lastNS
	}
	ns := m.threads[thread][name]
	if ns != nil {
		m.lastNS, m.lastThread, m.lastName = ns, thread, name
	}
	return ns
}

// forgetNamespace forgets the namespace namespace remembered; mu must be
// held for writing.
func (m *Memory) forgetNamespace() {
	m.lastNS, m.lastThread, m.lastName = nil, "", ""
}
