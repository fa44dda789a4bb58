package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/checkpointtest"
)

// Corrupt damages the stored checkpoint ref names as d says, for
// checkpointtest.Corrupter. The checkpoint column is jsonb, so a flipped
// byte keeps it valid JSON (checkpointtest.Flip).
func (s *Saver) Corrupt(ref checkpoint.Ref, d checkpointtest.Damage) error {
	ctx := context.Background()
	var tag pgconn.CommandTag
	var err error
	switch d.Kind {
	case checkpointtest.DamageEmptyObject:
		tag, err = s.pool.Exec(ctx, `UPDATE checkpoints SET checkpoint = '{}'::jsonb WHERE thread = $1 AND ns = $2 AND id = $3`,
			ref.ThreadID, ref.Namespace, ref.ID)
	case checkpointtest.DamageNull:
		tag, err = s.pool.Exec(ctx, `UPDATE checkpoints SET checkpoint = 'null'::jsonb WHERE thread = $1 AND ns = $2 AND id = $3`,
			ref.ThreadID, ref.Namespace, ref.ID)
	case checkpointtest.DamageFlipCheckpoint:
		tag, err = s.flip(`checkpoints`, `checkpoint::text`, `checkpoint = $4::jsonb`, `thread = $1 AND ns = $2 AND id = $3`,
			ref.ThreadID, ref.Namespace, ref.ID)
	case checkpointtest.DamageFlipBlob:
		tag, err = s.flip(`checkpoint_blobs`, `data`, `data = $5`, `thread = $1 AND ns = $2 AND key = $3 AND version = $4`,
			ref.ThreadID, ref.Namespace, d.Key, int64(d.Version))
	case checkpointtest.DamageFlipWrite:
		tag, err = s.flip(`checkpoint_writes`, `value`, `value = $5`, `thread = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4 AND idx = 0`,
			ref.ThreadID, ref.Namespace, ref.ID, d.TaskID)
	default:
		return fmt.Errorf("unknown damage %q", d.Kind)
	}
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("corrupt %s: %d rows changed", ref, tag.RowsAffected())
	}
	return nil
}

// flip reads expr of the one row of table that where selects, changes one
// byte, and writes it back with set (whose last parameter is the new
// value).
func (s *Saver) flip(table, expr, set, where string, args ...any) (pgconn.CommandTag, error) {
	ctx := context.Background()
	var data []byte
	if err := s.pool.QueryRow(ctx, `SELECT `+expr+` FROM `+table+` WHERE `+where, args...).Scan(&data); err != nil {
		return pgconn.CommandTag{}, err
	}
	return s.pool.Exec(ctx, `UPDATE `+table+` SET `+set+` WHERE `+where, append(args, checkpointtest.Flip(data))...)
}

// DamageLegacy replaces the checkpoint ref names with "{}" and clears its
// checksum, as a row written before checksums and then damaged.
func (s *Saver) DamageLegacy(ref checkpoint.Ref) error {
	_, err := s.pool.Exec(context.Background(), `UPDATE checkpoints SET checkpoint = '{}'::jsonb, sum = NULL WHERE thread = $1 AND ns = $2 AND id = $3`,
		ref.ThreadID, ref.Namespace, ref.ID)
	return err
}
