package checkpoint

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// WriteAppender is implemented by a Saver that can add pending writes to
// those a task already has, without rewriting them: a durable step
// (graph.Durable) is then one new row, not all of the task's steps again.
//
// AppendWrites adds writes to the writes stored for task taskID under
// checkpoint ref, in one transaction (which runs the context's
// transaction hook, as PutWrites does). An index the task already has
// makes it write nothing and return an error wrapping ErrConflict (the
// caller lost track of what is stored: it must PutWrites the whole set);
// a missing checkpoint is an error wrapping ErrNotFound; the writes are
// checked as PutWrites checks them. A Saver that wraps another returns an
// error wrapping errors.ErrUnsupported when the one it wraps cannot
// append; the caller then uses PutWrites.
type WriteAppender interface {
	AppendWrites(ctx context.Context, ref Ref, taskID string, writes []PendingWrite) error
}

// CheckWrites checks the pending writes given to PutWrites or AppendWrites
// for task taskID under ref (a task's own, each index once, each within
// maxBytes) and returns them sorted by index with TaskID set; op names the
// call in errors ("put writes", "append writes"). Savers share it.
func CheckWrites(ref Ref, op, taskID string, writes []PendingWrite, maxBytes int) ([]PendingWrite, error) {
	if ref.ThreadID == "" {
		return nil, errEmptyThread
	}
	if ref.ID == "" {
		return nil, fmt.Errorf("checkpoint: %s in %s: checkpoint ID is empty", op, ref)
	}
	if taskID == "" {
		return nil, fmt.Errorf("checkpoint: %s for %s: task ID is empty", op, ref)
	}
	ws := slices.Clone(writes)
	for i, w := range ws {
		if w.TaskID != "" && w.TaskID != taskID {
			return nil, fmt.Errorf("checkpoint: %s of task %q for %s: write %d belongs to task %q", op, taskID, ref, i, w.TaskID)
		}
		if err := CheckWriteSize(ref, op, taskID, w, maxBytes); err != nil {
			return nil, err
		}
		ws[i].TaskID = taskID
	}
	slices.SortFunc(ws, func(a, b PendingWrite) int { return cmp.Compare(a.Index, b.Index) })
	for i := 1; i < len(ws); i++ {
		if ws[i].Index == ws[i-1].Index {
			return nil, fmt.Errorf("checkpoint: %s of task %q for %s: index %d is used twice", op, taskID, ref, ws[i].Index)
		}
	}
	return ws, nil
}

// AppendWrites adds writes to the task's pending writes (WriteAppender).
func (m *Memory) AppendWrites(ctx context.Context, ref Ref, taskID string, writes []PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	checked, err := CheckWrites(ref, "append writes", taskID, writes, m.maxBytes)
	if err != nil {
		return err
	}
	ws := make([]memWrite, len(checked))
	for i, w := range checked {
		ws[i].PendingWrite = cloneWrite(w)
		ws[i].sum = WriteChecksum(ws[i].PendingWrite)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.threads[ref.ThreadID][ref.Namespace]
	c := ns.get(ref.ID)
	if c == nil {
		return notFound(ref)
	}
	old := c.writes()[taskID]
	for _, w := range ws {
		if slices.ContainsFunc(old, func(o memWrite) bool { return o.Index == w.Index }) {
			return fmt.Errorf("checkpoint: append writes of task %q for %s: index %d is stored already: %w", taskID, ref, w.Index, ErrConflict)
		}
	}
	all := append(slices.Clip(old), ws...) // a new array: readers may hold the old one
	slices.SortStableFunc(all, func(a, b memWrite) int { return cmp.Compare(a.Index, b.Index) })
	c.writesFor()[taskID] = all
	return nil
}
