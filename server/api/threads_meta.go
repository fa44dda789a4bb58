package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// Checkpoint metadata patches. The savers never change a saved checkpoint,
// so PATCH /threads/{id}/state keeps the merged keys in the store of record
// (db.CheckpointMetadata), keyed by checkpoint ID, and every state and
// history answer lays them over the checkpoint's own metadata.

// patchThreadState merges metadata into the latest checkpoint's metadata
// (or the one the body names) and answers 204.
func (a *API) patchThreadState(w http.ResponseWriter, r *http.Request) {
	t, ok := a.loadThread(w, r)
	if !ok {
		return
	}
	b, ok := decodeBody[wire.ThreadStatePatch](a, w, r)
	if !ok {
		return
	}
	if b.Checkpoint != nil && b.Checkpoint.ThreadID != "" && b.Checkpoint.ThreadID != t.ID {
		wire.Invalid(wire.FieldError{Pointer: "/checkpoint/thread_id", Detail: fmt.Sprintf("names thread %q, but the path names %q; leave it out or make them agree", b.Checkpoint.ThreadID, t.ID)}).Write(w, r)
		return
	}
	ctx, tenant := r.Context(), a.tenant(r)
	id, ns := b.CheckpointID, ""
	if b.Checkpoint != nil {
		if b.Checkpoint.CheckpointID != "" {
			id = b.Checkpoint.CheckpointID
		}
		ns = b.Checkpoint.CheckpointNS
	}
	g, err := a.threadGraph(ctx, tenant, t)
	if errors.Is(err, errNoGraph) {
		wire.Conflict("the thread has no checkpoints yet: run it or update its state first").Write(w, r)
		return
	}
	if err != nil {
		a.stateFail(w, r, err)
		return
	}
	opts := a.stateOpts(tenant, t.ID)
	if id != "" {
		opts = append(opts, graph.WithCheckpointID(id))
	}
	if ns != "" {
		opts = append(opts, graph.WithNamespace(ns))
	}
	snap, err := g.GetState(ctx, opts...)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound) && id != "":
		wire.NotFound("checkpoint", id).Write(w, r)
		return
	case errors.Is(err, checkpoint.ErrNotFound) || (err == nil && snap.Checkpoint.ID == ""):
		wire.Conflict("the thread has no checkpoints yet: run it or update its state first").Write(w, r)
		return
	case err != nil:
		a.stateFail(w, r, err)
		return
	}
	if _, err := a.DB.PatchCheckpointMetadata(ctx, tenant, t.ID, snap.Checkpoint.ID, db.Metadata(b.Metadata)); err != nil {
		a.notFoundOr(w, r, err, "thread", t.ID)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// overlays returns the thread's checkpoint metadata patches.
func (a *API) overlays(ctx context.Context, tenant, thread string) (map[string]db.Metadata, error) {
	return a.DB.CheckpointMetadata(ctx, tenant, thread)
}

// applyOverlay merges the patch of s's checkpoint, and of its subgraph
// states', into their metadata.
func applyOverlay(s *wire.ThreadState, over map[string]db.Metadata) {
	if len(over) == 0 {
		return
	}
	if s.Checkpoint.CheckpointID != nil {
		if md, ok := over[*s.Checkpoint.CheckpointID]; ok {
			if s.Metadata == nil {
				s.Metadata = wire.Metadata{}
			}
			for k, v := range md {
				s.Metadata[k] = v
			}
		}
	}
	for i := range s.Tasks {
		if s.Tasks[i].State != nil {
			applyOverlay(s.Tasks[i].State, over)
		}
	}
}

// metadataMatches reports whether md has every key of filter with an
// equal JSON value (numbers by value).
func metadataMatches(md wire.Metadata, filter wire.Metadata) bool {
	for k, want := range filter {
		got, ok := md[k]
		if !ok || !sameJSON(got, want) {
			return false
		}
	}
	return true
}

// sameJSON compares two values by their JSON meaning.
func sameJSON(a, b any) bool {
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var out any
		if json.Unmarshal(raw, &out) != nil {
			return nil
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
