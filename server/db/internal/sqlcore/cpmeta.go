package sqlcore

import (
	"context"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// threadExists checks that the thread exists.
func (s *Store) threadExists(ctx context.Context, tx Conn, tenant, id string) error {
	var one int
	err := tx.QueryRow(ctx, s.q.ThreadExists, tenant, id).Scan(&one)
	if s.d.IsNoRows(err) {
		return s.notFound("thread", id, tenant)
	}
	return s.wrap(err, "get thread %q", id)
}

// PatchCheckpointMetadata merges md into the overlay of the thread's
// checkpoint (top-level keys replace).
func (s *Store) PatchCheckpointMetadata(ctx context.Context, tenant, threadID, checkpointID string, md db.Metadata) (db.Metadata, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	if checkpointID == "" {
		return nil, dbutil.Invalid("the checkpoint ID is empty")
	}
	if _, err := dbutil.EncodeMetadata(md); err != nil {
		return nil, err
	}
	var out db.Metadata
	err := s.d.Write(ctx, func(tx Conn) error {
		if err := s.threadExists(ctx, tx, tenant, threadID); err != nil {
			return err
		}
		b, err := s.metadataPatch(md, func() (db.Metadata, error) {
			var raw []byte
			err := tx.QueryRow(ctx, s.q.GetCheckpointMetadata, tenant, threadID, checkpointID).Scan(&raw)
			if s.d.IsNoRows(err) {
				return nil, nil
			}
			if err != nil {
				return nil, s.wrap(err, "read the metadata of checkpoint %q", checkpointID)
			}
			old, err := dbutil.DecodeMetadata(raw)
			return old, s.wrap(err, "checkpoint %q", checkpointID)
		})
		if err != nil {
			return err
		}
		var raw []byte
		if err := tx.QueryRow(ctx, s.q.PatchCheckpointMetadata, tenant, threadID, checkpointID, b, s.d.Time(dbutil.Now())).Scan(&raw); err != nil {
			return s.wrap(err, "patch the metadata of checkpoint %q", checkpointID)
		}
		out, err = dbutil.DecodeMetadata(raw)
		return s.wrap(err, "checkpoint %q", checkpointID)
	})
	return out, err
}

// CheckpointMetadata returns the thread's checkpoint metadata overlays.
func (s *Store) CheckpointMetadata(ctx context.Context, tenant, threadID string) (map[string]db.Metadata, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	type overlay struct {
		id string
		md db.Metadata
	}
	scan := func(r Row) (overlay, error) {
		var o overlay
		var raw []byte
		if err := r.Scan(&o.id, &raw); err != nil {
			return o, err
		}
		md, err := dbutil.DecodeMetadata(raw)
		o.md = md
		return o, s.wrap(err, "checkpoint %q", o.id)
	}
	list, err := collect(ctx, s.d.Reader(), scan, s.q.CheckpointMetadata, tenant, threadID)
	if err != nil {
		return nil, s.wrap(err, "read the checkpoint metadata of thread %q", threadID)
	}
	out := make(map[string]db.Metadata, len(list))
	for _, o := range list {
		out[o.id] = o.md
	}
	return out, nil
}
