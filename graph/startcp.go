package graph

import (
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
)

// startCheckpoint is what WithStartCheckpoint gave: the latest checkpoint
// of one thread namespace as the caller read it (nil: there was none).
type startCheckpoint struct {
	ref checkpoint.Ref
	tup *checkpoint.Tuple
}

// WithStartCheckpoint hands a run (or GetState, or UpdateState) the latest
// checkpoint of its thread namespace that the caller has just read, so
// that the run starts from it instead of reading it from the saver again.
// ref names the thread and namespace that were read, with an empty ID (the
// latest); tup is exactly what the run's saver returned from Get(ctx, ref),
// pending writes included, or nil when Get reported checkpoint.ErrNotFound
// (the namespace has no checkpoint yet). The tuple is only read, never
// changed, so the same one may be given to GetState and then to Stream.
//
// The tuple stands in for the run's read of its namespace's head only:
// when ref does not name the run's thread and namespace (and for the runs
// of subgraphs, which checkpoint in namespaces of their own) the run reads
// from its saver as without the option; a checkpoint named with
// WithCheckpointID other than the head is still read. A tuple that is not
// of ref's namespace, or a ref with an ID, is an error when the run starts.
//
// The caller vouches that the tuple is still the head: a checkpoint saved
// in between makes the run's first Put fail with checkpoint.ErrConflict,
// as it would if it landed after the run's own read.
func WithStartCheckpoint(ref checkpoint.Ref, tup *checkpoint.Tuple) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().start = &startCheckpoint{ref: ref, tup: tup} })
}

// givenHead returns the head that WithStartCheckpoint gave for ref's
// namespace; ok is false when none was given for it (then the run reads
// it). tup is nil when the caller found the namespace empty.
func (r *run) givenHead(ref checkpoint.Ref) (tup *checkpoint.Tuple, ok bool, err error) {
	s := r.cfg.get().start
	if s == nil || r.parent != nil {
		return nil, false, nil
	}
	if s.ref.ID != "" {
		return nil, false, fmt.Errorf("graph: WithStartCheckpoint: ref %s names checkpoint %s; it must name a thread namespace's latest (an empty ID)", s.ref, s.ref.ID)
	}
	if s.tup != nil && (s.tup.Ref.ThreadID != s.ref.ThreadID || s.tup.Ref.Namespace != s.ref.Namespace) {
		return nil, false, fmt.Errorf("graph: WithStartCheckpoint: checkpoint %s is not of %s", s.tup.Ref, s.ref)
	}
	if s.ref.ThreadID != ref.ThreadID || s.ref.Namespace != ref.Namespace {
		return nil, false, nil
	}
	return s.tup, true, nil
}
