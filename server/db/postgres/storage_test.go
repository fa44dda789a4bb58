package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trellis-agents/trellis/server/db"
)

// PostgreSQL's storage failures are classified by SQLSTATE: disk_full as
// db.ErrStorageFull; the rest of class 53 and io_error as
// db.ErrUnavailable; other errors pass unchanged.
func TestStorageErrorsAreClassified(t *testing.T) {
	for _, c := range []struct {
		code string
		want error
	}{
		{"53100", db.ErrStorageFull},
		{"53200", db.ErrUnavailable}, // out_of_memory
		{"53300", db.ErrUnavailable}, // too_many_connections
		{"58030", db.ErrUnavailable}, // io_error
		{"23505", nil},               // unique_violation: not storage
	} {
		pgErr := &pgconn.PgError{Code: c.code, Message: "boom"}
		err := driver{}.Classify(fmt.Errorf("server/db/postgres: create thread %q: insert: %w", "t", pgErr))
		se, ok := db.AsStorage(err)
		switch {
		case c.want == nil && ok:
			t.Errorf("%s: classified as %v", c.code, se.Kind)
		case c.want != nil && (!errors.Is(err, c.want) || !errors.As(err, &pgErr)):
			t.Errorf("%s: %v; want %v wrapping the driver's error", c.code, err, c.want)
		}
	}
}
