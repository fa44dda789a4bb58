// Package sqlitedb opens the SQLite database files of the embedded backends
// (checkpoint/sqlite and store/sqlite) and keeps their schemas up to date.
//
// A database is opened as two connection pools over one file: Write, a
// single connection whose transactions start with BEGIN IMMEDIATE, so that
// writes of one process queue in Go and writes of several processes queue
// on SQLite's lock (waiting up to the busy timeout) instead of failing; and
// Read, several connections for readers, which in WAL mode never block the
// writer nor wait for it. Every connection is configured through the DSN, so
// a connection the pool reopens gets the same settings: journal_mode=WAL,
// synchronous=NORMAL, foreign_keys=ON and a busy timeout.
//
// Committed transactions go to the write-ahead log; copying the log into the
// database file (a WAL checkpoint, which syncs the file) is done by a
// background goroutine on a connection of its own every few commits, so
// that writers do not wait for it. The write connection still checkpoints
// by itself when the log grows past autoCheckpointPages.
//
// Each backend ("component") has its own numbered migrations, recorded in a
// shared schema_migrations table, so several components can keep their
// tables in one file. The driver is modernc.org/sqlite (pure Go, no cgo).
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// BusyTimeout is how long a connection waits for another connection's
// write lock (in this process or another) before a write fails with
// "database is locked".
const BusyTimeout = 5 * time.Second

// ErrNewerSchema is wrapped by Open's error when the database was migrated by
// a newer version of the code than the one running: its tables may have a
// shape this code does not know, so it is not opened.
var ErrNewerSchema = errors.New("sqlitedb: the database schema is newer than this program knows; upgrade the program")

// Migration is one step of a component's schema. Versions start at 1 and
// follow each other without gaps; a released migration is never changed,
// only followed by new ones.
type Migration struct {
	// Version numbers the step: 1 for the first, then 2, 3, ...
	Version int
	// SQL holds the statements of the step, separated by semicolons. They
	// run in one transaction together with the bookkeeping row.
	SQL string
}

// DB is an open database file: a write pool and a read pool over it, and a
// background WAL checkpointer. Create one with Open and release it with
// Close.
//
// Every DB of one file in a process shares the same pools (the checkpoint
// saver, the store, the service's tables and the run queue all live in one
// file): with one write connection per process, writers queue in Go for it
// instead of meeting at SQLite's file lock, whose busy handler sleeps for
// milliseconds at a time. The pools close with the file's last DB.
type DB struct {
	// Write has virtual connections over one physical connection, whose
	// transactions are committed in groups (group.go). A group begins with
	// BEGIN IMMEDIATE, taking the database's write lock at once, so a
	// transaction that reads and then writes cannot fail halfway because
	// another writer committed in between; its transactions run one after
	// another, and each one's Commit returns after the group's COMMIT. A
	// caller must not wait for another write while it holds a write
	// transaction: that write waits for the caller's transaction to end.
	Write *sql.DB
	// Read has several connections in query-only mode, for statements and
	// read transactions (BEGIN DEFERRED: a consistent snapshot from the
	// first read to the end).
	Read *sql.DB

	f      *file
	once   sync.Once
	done   atomic.Bool // Close was called
	closed error       // Close's result
}

// ErrClosed is returned by Ping after Close.
var ErrClosed = errors.New("sqlitedb: the database is closed")

// Ping checks that db is open and its file answers a read.
func (db *DB) Ping(ctx context.Context) error {
	if db.done.Load() {
		return ErrClosed
	}
	return db.Read.PingContext(ctx)
}

// file is the pools of one database file, shared by its DBs.
type file struct {
	path    string
	refs    int     // DBs open on it; guarded by filesMu
	write   *sql.DB // virtual connections over writer (group.go)
	writer  *writer
	read    *sql.DB
	ckpt    *sql.DB // one connection for background WAL checkpoints
	commits atomic.Uint64
	kick    chan struct{} // asks the checkpointer for a checkpoint
	stop    chan struct{} // closed by the last Close
	done    chan struct{} // closed when the checkpointer returns
}

var (
	filesMu sync.Mutex
	files   = map[string]*file{} // by absolute path
)

// checkpointEvery is how many commits Committed counts between two
// background WAL checkpoints.
const checkpointEvery = 64

// autoCheckpointPages is the WAL size, in pages, at which the write
// connection checkpoints by itself, in case the background checkpoints
// cannot keep up with a steady stream of writes.
const autoCheckpointPages = 4000

// Open opens the database file at path, creating it and its directory when
// they do not exist, and applies the component's migrations that the file
// does not have yet, each in one transaction. Two processes opening a file
// at once migrate it once: the second waits for the first's lock and then
// finds the work done. Open fails with an error wrapping ErrNewerSchema when
// the file has more migrations of the component than migrations lists.
func Open(ctx context.Context, path, component string, migrations []Migration) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlitedb: the database path is empty")
	}
	if component == "" {
		return nil, errors.New("sqlitedb: the component name is empty")
	}
	for i, m := range migrations {
		if m.Version != i+1 {
			return nil, fmt.Errorf("sqlitedb: migration %d of %s has version %d; versions must count up from 1", i, component, m.Version)
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitedb: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("sqlitedb: open %s: create the directory: %w", path, err)
	}

	f, err := acquire(ctx, abs)
	if err != nil {
		return nil, fmt.Errorf("sqlitedb: open %s: %w", path, err)
	}
	db := &DB{Write: f.write, Read: f.read, f: f}
	if err := db.migrate(ctx, component, migrations); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitedb: open %s: %w", path, err)
	}
	return db, nil
}

// acquire returns the pools of the file at abs, opening them when no DB of
// this process has them open.
func acquire(ctx context.Context, abs string) (*file, error) {
	filesMu.Lock()
	defer filesMu.Unlock()
	if f, ok := files[abs]; ok {
		f.refs++
		return f, nil
	}
	f := &file{path: abs, refs: 1, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	var err error
	if f.writer, err = newWriter(dsn(abs, poolWrite)); err != nil {
		return nil, err
	}
	f.write = sql.OpenDB(f.writer)
	f.write.SetMaxOpenConns(writeConns)
	f.write.SetMaxIdleConns(writeConns)
	// The write connection is opened first and alone, so the switch of a
	// new file to WAL mode does not race with the readers.
	if err := f.write.PingContext(ctx); err != nil {
		f.write.Close()
		f.writer.close()
		return nil, err
	}
	if f.read, err = openPool(dsn(abs, poolRead)); err != nil {
		f.write.Close()
		f.writer.close()
		return nil, err
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	f.read.SetMaxOpenConns(readers)
	f.read.SetMaxIdleConns(readers)
	if f.ckpt, err = sql.Open("sqlite", dsn(abs, poolCheckpoint)); err != nil {
		f.write.Close()
		f.writer.close()
		f.read.Close()
		return nil, err
	}
	f.ckpt.SetMaxOpenConns(1)
	f.ckpt.SetMaxIdleConns(1)
	go f.checkpointer()
	files[abs] = f
	return f, nil
}

// release drops one DB's hold on f and closes its pools with the last.
func (f *file) release() error {
	filesMu.Lock()
	f.refs--
	last := f.refs == 0
	if last {
		delete(files, f.path)
	}
	filesMu.Unlock()
	if !last {
		return nil
	}
	close(f.stop)
	<-f.done
	return errors.Join(f.ckpt.Close(), f.read.Close(), f.write.Close(), f.writer.close())
}

// Committed tells db that a write transaction committed. Every
// checkpointEvery commits it wakes the background checkpointer; it never
// blocks. Backends call it after each commit of the Write pool.
func (db *DB) Committed() {
	if db.f.commits.Add(1)%checkpointEvery != 0 {
		return
	}
	select {
	case db.f.kick <- struct{}{}:
	default: // a checkpoint is already pending
	}
}

// checkpointer runs a PASSIVE WAL checkpoint each time it is kicked, until
// Close. A PASSIVE checkpoint copies what it can without waiting for
// readers or writers; one that fails or stops short is completed by the next
// one, or by the write connection's own checkpoint (autoCheckpointPages),
// so its errors are not reported.
func (f *file) checkpointer() {
	defer close(f.done)
	for {
		select {
		case <-f.stop:
			return
		case <-f.kick:
			f.ckpt.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
}

// openPool opens a pool whose connections cache their prepared
// statements (stmtcache.go).
func openPool(dsn string) (*sql.DB, error) {
	c, err := newConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// The connection pools of a DB.
const (
	poolWrite = iota
	poolRead
	poolCheckpoint
)

// dsn returns the driver's connection string for a connection of pool to
// the file at abs. The parameters are applied by the driver to every new
// connection.
func dsn(abs string, pool int) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	switch pool {
	case poolWrite:
		q.Set("_txlock", "immediate")
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", autoCheckpointPages))
		// Each transaction of a group runs in a savepoint, whose
		// sub-journal (the original of each page it changes) SQLite
		// otherwise keeps in a temporary file: an open, writes and a close
		// per transaction.
		q.Add("_pragma", "temp_store(MEMORY)")
	case poolRead:
		q.Add("_pragma", "query_only(1)")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.f.path }

// Size returns the bytes on disk of the database file and its write-ahead
// log. Data committed since the last WAL checkpoint is counted in the log,
// so the total only shrinks when the log is truncated.
func (db *DB) Size() (int64, error) {
	var total int64
	for _, p := range []string{db.f.path, db.f.path + "-wal"} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) && p != db.f.path {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("sqlitedb: size of %s: %w", db.f.path, err)
		}
		total += fi.Size()
	}
	return total, nil
}

// Close releases db; the last DB of its file in the process stops the
// background checkpointer and closes the pools, after which statements
// prepared on them are unusable. Closing again returns the
// first Close's result.
func (db *DB) Close() error {
	db.once.Do(func() {
		db.done.Store(true)
		db.closed = db.f.release()
	})
	return db.closed
}

const createMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	component  TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	applied_at TEXT    NOT NULL,
	PRIMARY KEY (component, version)
)`

// migrate applies the missing migrations of component, each in its own
// BEGIN IMMEDIATE transaction that first re-reads the version, so a
// concurrent opener never applies a step twice.
func (db *DB) migrate(ctx context.Context, component string, migrations []Migration) error {
	for {
		done, err := db.migrateOne(ctx, component, migrations)
		if err != nil || done {
			return err
		}
	}
}

// Migrate applies the missing migrations of another component to the
// file db has open, as Open does for its own: for a package that keeps a
// second, independently versioned set of tables next to the first.
func (db *DB) Migrate(ctx context.Context, component string, migrations []Migration) error {
	if component == "" {
		return errors.New("sqlitedb: the component name is empty")
	}
	for i, m := range migrations {
		if m.Version != i+1 {
			return fmt.Errorf("sqlitedb: migration %d of %s has version %d; versions must count up from 1", i, component, m.Version)
		}
	}
	if err := db.migrate(ctx, component, migrations); err != nil {
		return fmt.Errorf("sqlitedb: %s: %w", db.Path(), err)
	}
	return nil
}

// migrateOne applies the next missing migration and reports whether none
// was missing.
func (db *DB) migrateOne(ctx context.Context, component string, migrations []Migration) (done bool, err error) {
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, createMigrations); err != nil {
		return false, fmt.Errorf("create schema_migrations: %w", err)
	}
	current, err := version(ctx, tx, component)
	if err != nil {
		return false, err
	}
	if current > len(migrations) {
		return false, fmt.Errorf("component %s is at schema version %d, this program knows versions up to %d: %w",
			component, current, len(migrations), ErrNewerSchema)
	}
	if current < len(migrations) {
		m := migrations[current]
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return false, fmt.Errorf("migration %d of %s: %w", m.Version, component, err)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (component, version, applied_at) VALUES (?, ?, ?)`,
			component, m.Version, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
			return false, fmt.Errorf("record migration %d of %s: %w", m.Version, component, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return current == len(migrations), nil
}

// Querier is what SchemaVersion reads through: a *sql.DB, *sql.Tx or
// *sql.Conn.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SchemaVersion returns the schema version of component recorded in the
// database: 0 when it has no migrations, or no schema_migrations table.
func SchemaVersion(ctx context.Context, q Querier, component string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	return version(ctx, q, component)
}

func version(ctx context.Context, q Querier, component string) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations WHERE component = ?`, component).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read the schema version of %s: %w", component, err)
	}
	return v, nil
}
