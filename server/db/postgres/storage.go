package postgres

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trellis-agents/trellis/server/db"
)

// classify wraps a storage failure in a *db.StorageError: SQLSTATE
// 53100 (disk_full) as db.ErrStorageFull; the rest of class 53
// (insufficient resources: out of memory, too many connections), 58030
// (io_error) and a failure to connect as db.ErrUnavailable. Other errors
// are returned as they are.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := db.AsStorage(err); ok {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "53100":
			return &db.StorageError{Kind: db.ErrStorageFull, Database: "PostgreSQL", Err: err}
		case strings.HasPrefix(pgErr.Code, "53"), pgErr.Code == "58030":
			return &db.StorageError{Kind: db.ErrUnavailable, Database: "PostgreSQL", Err: err}
		}
		return err
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return &db.StorageError{Kind: db.ErrUnavailable, Database: "PostgreSQL", Err: err}
	}
	return err
}
