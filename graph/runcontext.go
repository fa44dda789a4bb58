package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
)

// ErrNoRunContext is returned by RunContext when the run was given none.
var ErrNoRunContext = errors.New("graph: the run has no context; pass one with WithRunContext")

// ctxKey is the reserved blob key under which a run's context is saved.
const ctxKey = "__context__"

// WithRunContext gives the run an immutable context: values such as the
// user's ID, a tenant or per-run settings that nodes read with RunContext
// but never write (LangGraph's context). It is encoded as JSON once, saved
// with the thread's checkpoints and restored when the thread is resumed, so
// a run resumed in another process sees the context it started with; a run
// that passes its own context replaces it from then on. Subgraphs and
// graphs invoked from a node see their parent's context unless given
// their own.
func WithRunContext(v any) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().runCtx, c.rare().runCtxSet = v, true })
}

// RunContext decodes the context of the run the node belongs to into a T.
// It returns ErrNoRunContext when the run has none, and an error naming T
// when the context does not decode as one.
func RunContext[T any](ctx context.Context) (T, error) {
	t := taskFrom(ctx)
	if t == nil {
		var zero T
		return zero, errors.New("graph: RunContext was called outside a graph node")
	}
	raw := t.r.runContext()
	if raw == nil {
		var zero T
		return zero, ErrNoRunContext
	}
	// v is declared here, not above: decoding into it moves it to the
	// heap, and a run without a context (most runs; react asks for the
	// client's context before every model call) should not pay for that.
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("graph: the run's context does not decode as %T: %w", v, err)
	}
	return v, nil
}

// runContext returns the run's context as JSON: its own, or its parent
// task's run's.
func (r *run) runContext() json.RawMessage {
	for ; r != nil; r = r.parentRun() {
		if r.x != nil && r.x.ctxJSON != nil {
			return r.x.ctxJSON
		}
	}
	return nil
}

func (r *run) parentRun() *run {
	if r.parent == nil {
		return nil
	}
	return r.parent.r
}

// setRunContext encodes the context given to the run; it replaces the
// restored one when different, and is then saved with the next
// checkpoint.
func (r *run) setRunContext() error {
	if !r.cfg.get().runCtxSet {
		return nil
	}
	b, err := json.Marshal(r.cfg.get().runCtx)
	if err != nil {
		return fmt.Errorf("graph: encode the run context: %w", err)
	}
	x := r.extra()
	if x.ctxJSON != nil && bytes.Equal(x.ctxJSON, b) {
		return nil
	}
	x.ctxJSON, x.ctxDirty = b, true
	return nil
}

// contextBlob adds the run context to a checkpoint being saved.
func (r *run) contextBlob(cp *checkpoint.Checkpoint, vers []checkpoint.KeyVersion) []checkpoint.KeyVersion {
	if r.x == nil || r.x.ctxJSON == nil || r.parent != nil && !r.cfg.get().runCtxSet {
		return vers // a nested run without its own context reads its parent's
	}
	if r.x.ctxDirty {
		r.x.ctxVer = (r.x.ctxVer>>32+1)<<32 | uint64(r.tag())
		cp.Blobs = append(cp.Blobs, checkpoint.Blob{Key: ctxKey, Version: r.x.ctxVer, Kind: checkpoint.Full, Data: r.x.ctxJSON})
		r.x.ctxDirty = false
	}
	return append(vers, checkpoint.KeyVersion{Key: ctxKey, Version: r.x.ctxVer})
}

// restoreContext reads a saved run context.
func (r *run) restoreContext(b checkpoint.Blob) error {
	if b.Kind != checkpoint.Full || !json.Valid(b.Data) {
		return fmt.Errorf("run context version %d is not a full JSON value", b.Version)
	}
	x := r.extra()
	x.ctxJSON, x.ctxVer = bytes.Clone(b.Data), b.Version
	return nil
}
