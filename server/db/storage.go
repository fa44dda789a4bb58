package db

import (
	"errors"
	"fmt"
)

// Storage failures: the database cannot take a write (or answer) for a
// reason of the machine, not of the request. The stores classify their
// drivers' errors into a *StorageError wrapping one of these, and every
// wire answers them in its own shape: ErrStorageFull as 507 Insufficient
// Storage, ErrUnavailable as 503 with Retry-After.
var (
	// ErrStorageFull: the disk (or quota) holding the database is full:
	// SQLite's SQLITE_FULL, PostgreSQL's disk_full (53100).
	ErrStorageFull = errors.New("db: the database's storage is full")
	// ErrUnavailable: the database cannot serve for now: an I/O error
	// (SQLITE_IOERR*, PostgreSQL's io_error 58030), out of memory or
	// connections (PostgreSQL's class 53), or the server unreachable.
	ErrUnavailable = errors.New("db: the database is unavailable")
)

// StorageError is a storage failure (Kind is ErrStorageFull or
// ErrUnavailable) with the driver's error and the database it happened
// on, for the log. errors.Is matches Kind and the driver's error.
type StorageError struct {
	Kind     error
	Database string // the SQLite file's path, or "PostgreSQL"
	Err      error
}

// Error names the kind, the database and the driver's message.
func (e *StorageError) Error() string {
	return fmt.Sprintf("%v (database %s): %v", e.Kind, e.Database, e.Err)
}

// Unwrap returns the kind and the driver's error.
func (e *StorageError) Unwrap() []error { return []error{e.Kind, e.Err} }

// Advice is what a client is told: what happened and what to do, without
// the server's paths.
func (e *StorageError) Advice() string {
	if errors.Is(e.Kind, ErrStorageFull) {
		return "the server's database storage is full, so nothing was saved; the operator must free disk space (or raise the quota), then retry"
	}
	return "the server's database is unavailable for now (an I/O error, or it is out of memory or connections); nothing was saved; retry shortly"
}

// AsStorage returns the storage failure in err's chain, if any.
func AsStorage(err error) (*StorageError, bool) {
	var se *StorageError
	ok := errors.As(err, &se)
	return se, ok
}

// RetryAfterSeconds is the Retry-After the wires send with a 503 for
// ErrUnavailable.
const RetryAfterSeconds = 5
