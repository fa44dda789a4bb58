package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Retention is a policy for how much of a thread's checkpoint history to
// keep. It works per thread namespace on the checkpoint tree that
// Metadata.Parent links form:
//
//   - The main line is the chain from the namespace's latest checkpoint
//     (its head) back through parents. KeepLast keeps its newest N
//     checkpoints; 0 keeps the whole main line.
//   - A superseded branch is one whose head (a checkpoint no other
//     checkpoint names as parent) is not the namespace's latest: what is
//     left of the old line after a fork or an edit of an earlier state.
//     When its head was created more than ForksOlderThan ago (and
//     ForksOlderThan > 0) the whole branch goes. Otherwise its head stays,
//     so the fork can still be opened; with KeepLast > 0 the rest of the
//     branch goes, with KeepLast 0 it stays.
//
// Whatever the limits say, retention never drops: a namespace's latest
// checkpoint; a branch head that has pending writes of an interrupt
// (WriteInterrupt) or of a durable step (WriteStep), since a run waits or
// is under way there; and any checkpoint the caller's ProtectSet names
// (live runs, references from outside such as eval cases).
//
// The zero Retention keeps everything.
type Retention struct {
	// KeepLast is how many checkpoints of the main line to keep; 0 means
	// no limit.
	KeepLast int
	// ForksOlderThan drops superseded branches whose head is older than
	// this; 0 means they are never dropped by age.
	ForksOlderThan time.Duration
}

// Enabled reports whether the policy can drop anything.
func (r Retention) Enabled() bool { return r.KeepLast > 0 || r.ForksOlderThan > 0 }

// Validate reports a policy with negative limits.
func (r Retention) Validate() error {
	if r.KeepLast < 0 || r.ForksOlderThan < 0 {
		return fmt.Errorf("checkpoint: retention: negative limit (keep last %d, forks older than %s)", r.KeepLast, r.ForksOlderThan)
	}
	return nil
}

// ProtectSet names checkpoints that retention must keep. A service builds
// one per thread from what it knows and the checkpoint store does not: the
// checkpoints live runs started from, ones an experiment or a dataset case
// references, and so on.
type ProtectSet interface {
	// Protects reports whether the checkpoint ref names must be kept.
	Protects(ref Ref) bool
}

// ProtectIDs is a ProtectSet of checkpoint IDs (IDs are unique across
// threads and namespaces, so an ID alone names a checkpoint).
type ProtectIDs map[string]bool

// Protects reports whether ref.ID is in the set.
func (p ProtectIDs) Protects(ref Ref) bool { return p[ref.ID] }

// Remover is an optional interface of a Saver that can remove named
// checkpoints; Retain needs it. The savers of packages checkpoint/sqlite,
// checkpoint/postgres and checkpoint/redis and Memory implement it; the
// conformance suite checks every Saver that does.
type Remover interface {
	// RemoveCheckpoints removes, atomically, the checkpoints of ref's
	// thread namespace whose IDs are in ids, with their pending writes and
	// every blob of the namespace that no remaining checkpoint needs to
	// rebuild its state (a remaining checkpoint whose blob chain starts in
	// a removed one's blobs keeps them, so it reads back unchanged). The
	// namespace's latest checkpoint is never removed, even when named, so
	// the next Put's parent stays. IDs that are not there are skipped. It
	// returns how many checkpoints it removed.
	RemoveCheckpoints(ctx context.Context, ref Ref, ids []string) (int, error)
}

// RetainStats counts what Retain did to one thread.
type RetainStats struct {
	Namespaces int // thread namespaces visited
	Kept       int // checkpoints kept
	Removed    int // checkpoints removed
}

// Retain applies policy r to every namespace of thread threadID of s,
// keeping what protect names (nil protects nothing beyond the policy's own
// guarantees). It reads each namespace's checkpoints with List, plans with
// Plan, and removes the rest with RemoveCheckpoints.
//
// A checkpoint written while Retain runs is never removed (it is not in the
// plan), and neither is the namespace's latest at removal time. A fork or
// state update that a caller bases, at that very moment, on a checkpoint
// Retain is removing can find it gone; callers protect checkpoints they
// are about to use (see ProtectSet).
func Retain(ctx context.Context, s interface {
	Saver
	Exporter
	Remover
}, threadID string, r Retention, protect ProtectSet) (RetainStats, error) {
	var st RetainStats
	if err := r.Validate(); err != nil {
		return st, err
	}
	if threadID == "" {
		return st, fmt.Errorf("checkpoint: retain: thread ID is empty")
	}
	nss, err := s.Namespaces(ctx, threadID)
	if err != nil {
		return st, fmt.Errorf("checkpoint: retain %s: list namespaces: %w", Ref{ThreadID: threadID}, err)
	}
	now := time.Now()
	for _, ns := range nss {
		ref := Ref{ThreadID: threadID, Namespace: ns}
		var nodes []RetentionNode
		for t, err := range s.List(ctx, ref, ListOptions{}) {
			if err != nil {
				return st, fmt.Errorf("checkpoint: retain %s: %w", ref, err)
			}
			nodes = append(nodes, NodeOf(t))
		}
		st.Namespaces++
		drop := r.Plan(ref, nodes, now, protect)
		st.Kept += len(nodes) - len(drop)
		if len(drop) == 0 {
			continue
		}
		n, err := s.RemoveCheckpoints(ctx, ref, drop)
		st.Removed += n
		st.Kept += len(drop) - n
		if err != nil {
			return st, fmt.Errorf("checkpoint: retain %s: %w", ref, err)
		}
	}
	return st, nil
}

// RetentionNode is what Plan needs to know of one checkpoint.
type RetentionNode struct {
	ID      string
	Parent  string
	Created time.Time
	// Busy is set when the checkpoint has pending writes of an interrupt
	// or a durable step.
	Busy bool
}

// NodeOf returns the RetentionNode of a stored checkpoint.
func NodeOf(t *Tuple) RetentionNode {
	n := RetentionNode{ID: t.Ref.ID, Parent: t.Metadata.Parent, Created: t.Checkpoint.Created}
	for _, w := range t.Writes {
		if w.Key == WriteInterrupt || w.Key == WriteStep {
			n.Busy = true
			break
		}
	}
	return n
}

// Plan returns the IDs of the checkpoints of one namespace (nodes, in any
// order; the one whose ID sorts last is the latest) that policy r drops at
// time now, oldest first. See Retention for the rules.
func (r Retention) Plan(ref Ref, nodes []RetentionNode, now time.Time, protect ProtectSet) []string {
	if !r.Enabled() || len(nodes) == 0 {
		return nil
	}
	byID := make(map[string]*RetentionNode, len(nodes))
	hasChild := make(map[string]bool, len(nodes))
	latest := ""
	for i := range nodes {
		n := &nodes[i]
		byID[n.ID] = n
		if n.Parent != "" {
			hasChild[n.Parent] = true
		}
		if n.ID > latest {
			latest = n.ID
		}
	}
	keep := make(map[string]bool, len(nodes))
	main := make(map[string]bool)
	count := 0
	for id := latest; id != "" && !main[id]; {
		n, ok := byID[id]
		if !ok {
			break // the chain ends at a checkpoint already dropped
		}
		main[id] = true
		if r.KeepLast == 0 || count < r.KeepLast {
			keep[id] = true
		}
		count++
		id = n.Parent
	}
	cutoff := now.Add(-r.ForksOlderThan)
	for i := range nodes {
		n := &nodes[i]
		one := Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: n.ID}
		if protect != nil && protect.Protects(one) {
			keep[n.ID] = true
		}
		if main[n.ID] || hasChild[n.ID] {
			continue
		}
		// n heads a superseded branch.
		if n.Busy {
			keep[n.ID] = true
		}
		if r.ForksOlderThan > 0 && n.Created.Before(cutoff) {
			continue
		}
		keep[n.ID] = true
		if r.KeepLast == 0 {
			// Keep the whole branch, up to where it joins the main line.
			for id := n.Parent; id != "" && !main[id] && !keep[id]; {
				p, ok := byID[id]
				if !ok {
					break
				}
				keep[id] = true
				id = p.Parent
			}
		}
	}
	var drop []string
	for _, n := range nodes {
		if !keep[n.ID] {
			drop = append(drop, n.ID)
		}
	}
	slices.Sort(drop)
	return drop
}
