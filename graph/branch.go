package graph

import (
	"fmt"
	"sync"

	"github.com/trellis-agents/trellis/checkpoint"
)

// branchBound makes Stateful subgraphs follow the parent's branch when a
// root run travels back in time: started from a checkpoint that is not the
// thread's latest (a replay, or new input on an old checkpoint), or from a
// fork (UpdateState on an older checkpoint), without answering an
// interrupt. The first time the run enters each Stateful namespace it
// restores that namespace's latest checkpoint saved before the checkpoint
// the branch leaves from — the state the subgraph had then — instead of the
// namespace's newest, which may belong to the abandoned branch; later
// visits in the same run, and later runs on the new branch, find the
// branch's own checkpoints as the newest. This is LangGraph's rule for
// subgraphs on replay (its ReplayState); checkpoint IDs sort by creation,
// which is what "before" means.
type branchBound struct {
	before  string // checkpoint ID: restore what was saved before it
	mu      sync.Mutex
	visited map[string]bool // Stateful namespaces already entered
}

// first reports whether the run enters namespace ns for the first time.
func (b *branchBound) first(ns string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.visited[ns] {
		return false
	}
	if b.visited == nil {
		b.visited = map[string]bool{}
	}
	b.visited[ns] = true
	return true
}

// setBranchBound decides, for a root run about to start from tup, whether
// it travels back in time (see branchBound).
func (r *run) setBranchBound(tup *checkpoint.Tuple) {
	if r.parent != nil || tup == nil || r.cfg.get().resumeOne || r.cfg.get().resumeMap != nil {
		return
	}
	src := tup.Metadata.Source
	if tup.Ref.ID == r.headID && src != checkpoint.SourceFork {
		return // the thread goes on where it is
	}
	before := tup.Ref.ID
	if (src == checkpoint.SourceFork || src == checkpoint.SourceUpdate) && tup.Metadata.Parent != "" {
		// A fork is saved after the subgraph checkpoints of the branch it
		// left: the branch starts at the checkpoint it copies.
		before = tup.Metadata.Parent
	}
	r.extra().branch = &branchBound{before: before}
}

// branchBound returns the root run's bound, if it travels back in time.
func (r *run) branchBound() *branchBound {
	root := r
	for root.parent != nil {
		root = root.parent.r
	}
	if root.x == nil {
		return nil
	}
	return root.x.branch
}

// branchCheckpoint returns, for a Stateful subgraph run entering its
// namespace for the first time in a run that travels back in time, the
// namespace's latest checkpoint before the bound (nil when there is none:
// the subgraph had no state yet on that branch). ok is false when the
// bound does not apply.
func (r *run) branchCheckpoint(ref checkpoint.Ref) (tup *checkpoint.Tuple, ok bool, err error) {
	if r.parent == nil || !r.parent.node.stateful {
		return nil, false, nil
	}
	b := r.branchBound()
	if b == nil || !b.first(r.ns) {
		return nil, false, nil
	}
	r.extra().branched = true
	for t, err := range r.cfg.saver.List(r.ctx, ref, checkpoint.ListOptions{Before: b.before, Limit: 1}) {
		if err != nil {
			return nil, true, fmt.Errorf("graph: load %s before %s: %w", ref, b.before, err)
		}
		return t, true, nil
	}
	return nil, true, nil
}
