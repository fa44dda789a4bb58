package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/db"
)

// retentionCursor is where the retention sweep goes on from: the
// checkpoint thread key after which the next tick starts ("" from the
// first). Each Server has its own; replicas sweep independently, which is
// harmless since applying a policy twice removes nothing more.
type retentionCursor struct {
	mu    sync.Mutex
	after string
}

// retentionFor returns the policy of a thread: its assistant's (thread
// metadata assistant_id, set by each run) or the server-wide default.
func (s *Server) retentionFor(t db.Thread) checkpoint.Retention {
	if id, ok := t.Metadata["assistant_id"].(string); ok {
		if r, ok := s.cfg.AssistantRetention[id]; ok {
			return r
		}
	}
	return s.cfg.Retention
}

// retentionOn reports whether any policy is configured.
func (s *Server) retentionOn() bool {
	if s.cfg.Retention.Enabled() {
		return true
	}
	for _, r := range s.cfg.AssistantRetention {
		if r.Enabled() {
			return true
		}
	}
	return false
}

type retainingSaver interface {
	checkpoint.Saver
	checkpoint.Exporter
	checkpoint.Remover
}

// RetentionStats counts what one retention sweep did.
type RetentionStats struct {
	Threads int // threads a policy was applied to
	Removed int // checkpoints removed
	// Wrapped is set when the sweep reached the last thread, so the next
	// one starts from the first again.
	Wrapped bool
}

// sweepRetention applies the checkpoint retention policies to the next
// batch (ThreadSweepBatch) of threads holding checkpoints, in thread key
// order, going on from where the previous sweep stopped. A thread the store
// of record does not know (no row: being deleted, or not a service thread)
// is skipped. It keeps what protectedCheckpoints names.
func (s *Server) sweepRetention(ctx context.Context) (RetentionStats, error) {
	var st RetentionStats
	if !s.retentionOn() {
		return st, nil
	}
	saver, ok := s.st.saver.(retainingSaver)
	if !ok {
		return st, errors.New("the checkpoint saver cannot remove single checkpoints, so retention is off")
	}
	batch := s.cfg.ThreadSweepBatch
	if batch <= 0 {
		batch = DefaultThreadSweepBatch
	}
	s.retain.mu.Lock()
	defer s.retain.mu.Unlock()
	keys, err := saver.Threads(ctx, s.retain.after, batch)
	if err != nil {
		return st, fmt.Errorf("list threads for retention: %w", err)
	}
	if len(keys) < batch {
		st.Wrapped = true
		s.retain.after = ""
	} else {
		s.retain.after = keys[len(keys)-1]
	}
	var errs []error
	for _, key := range keys {
		tenant, threadID, ok := strings.Cut(key, "/")
		if !ok {
			continue
		}
		th, err := s.st.db.GetThread(ctx, tenant, threadID)
		if errors.Is(err, db.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: read thread %s: %w", threadID, err))
			continue
		}
		policy := s.retentionFor(th)
		if !policy.Enabled() {
			continue
		}
		protect, err := s.protectedCheckpoints(ctx, tenant, th)
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: protected checkpoints of thread %s: %w", threadID, err))
			continue
		}
		rs, err := checkpoint.Retain(ctx, saver, key, policy, protect)
		st.Removed += rs.Removed
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: thread %s: %w", threadID, err))
			continue
		}
		st.Threads++
	}
	return st, errors.Join(errs...)
}

// protectedCheckpoints returns the checkpoints of a thread that retention
// must keep, beyond what the policy keeps on its own (every namespace's
// latest, waiting interrupts and durable steps on branch heads): every
// checkpoint ID named by a live (pending or running) run's request (the
// checkpoint it starts or forks from), by the thread's pending interrupts
// or its metadata, or by the metadata overlays patched onto checkpoints
// (those checkpoints and what their overlays name), and what
// Config.RetentionProtect adds. Every string in those JSON values counts as
// a possible ID: protecting a string that names no checkpoint costs
// nothing.
func (s *Server) protectedCheckpoints(ctx context.Context, tenant string, th db.Thread) (checkpoint.ProtectIDs, error) {
	p := checkpoint.ProtectIDs{}
	for _, status := range []db.RunStatus{db.RunPending, db.RunRunning} {
		for off := 0; ; off += 500 {
			rs, err := s.st.db.ListRuns(ctx, tenant, th.ID, db.RunQuery{Status: status, Limit: 500, Offset: off})
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				addStrings(p, r.Kwargs)
			}
			if len(rs) < 500 {
				break
			}
		}
	}
	addStrings(p, th.Interrupts)
	if b, err := json.Marshal(th.Metadata); err == nil {
		addStrings(p, b)
	}
	overlays, err := s.st.db.CheckpointMetadata(ctx, tenant, th.ID)
	if err != nil {
		return nil, err
	}
	for id, md := range overlays {
		p[id] = true
		if b, err := json.Marshal(md); err == nil {
			addStrings(p, b)
		}
	}
	if f := s.cfg.RetentionProtect; f != nil {
		ids, err := f(ctx, tenant, th.ID)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			p[id] = true
		}
	}
	return p, nil
}

// addStrings adds every string found in the JSON raw (keys and values, at
// any depth) to p. Input that is not JSON adds nothing.
func addStrings(p checkpoint.ProtectIDs, raw []byte) {
	if len(raw) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			p[v] = true
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				p[k] = true
				walk(e)
			}
		}
	}
	walk(v)
}
