package postgres

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
)

// Corrupt damages the stored checkpoint ref names so that it no longer
// decodes, for checkpointtest.Corrupter.
func (s *Saver) Corrupt(ref checkpoint.Ref) error {
	tag, err := s.pool.Exec(context.Background(),
		`UPDATE checkpoints SET checkpoint = '"not a checkpoint"'::jsonb WHERE thread = $1 AND ns = $2 AND id = $3`,
		ref.ThreadID, ref.Namespace, ref.ID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("corrupt %s: no such checkpoint", ref)
	}
	return nil
}
