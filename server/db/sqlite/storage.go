package sqlite

import (
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/trellis-agents/trellis/server/db"
)

// classify wraps a storage failure of the file at path — SQLITE_FULL
// (the disk is full) as db.ErrStorageFull, SQLITE_IOERR* and SQLITE_NOMEM
// as db.ErrUnavailable — in a *db.StorageError naming the file; other
// errors are returned as they are.
func classify(err error, path string) error {
	if err == nil {
		return nil
	}
	if _, ok := db.AsStorage(err); ok {
		return err
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary code of an extended one
	case sqlite3.SQLITE_FULL:
		return &db.StorageError{Kind: db.ErrStorageFull, Database: path, Err: err}
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_NOMEM:
		return &db.StorageError{Kind: db.ErrUnavailable, Database: path, Err: err}
	}
	return err
}
