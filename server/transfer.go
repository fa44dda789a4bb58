package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/trellis-agents/trellis/server/queue"
	"github.com/trellis-agents/trellis/server/transfer"
)

// Transfer copies everything the service keeps in database from (as
// Config.Database: a SQLite path, sqlite://PATH or postgres://…) to
// database to, every tenant's: `trellis transfer`. The target is created
// or migrated first (River's tables included, so a server can start on it
// at once); the source must exist. Rows the target has already are
// skipped, so running it again finishes an interrupted copy (see package
// server/transfer). With opts.DryRun it only counts, and the target is
// not opened. Stop the servers on the source first, or transfer a backup.
func Transfer(ctx context.Context, from, to string, opts transfer.Options) (transfer.Report, error) {
	fk, ft, err := parseDatabase(from)
	if err != nil {
		return transfer.Report{}, fmt.Errorf("transfer: --from: %w", err)
	}
	tk, tt, err := parseDatabase(to)
	if err != nil {
		return transfer.Report{}, fmt.Errorf("transfer: --to: %w", err)
	}
	if fk == tk && sameTarget(fk, ft, tt) {
		return transfer.Report{}, fmt.Errorf("%w (%s); give another --to", transfer.ErrSameDatabase, redact(tt))
	}
	if fk == "sqlite" {
		if _, err := os.Stat(ft); err != nil {
			return transfer.Report{}, fmt.Errorf("transfer: --from %s: %w; give the file `trellis serve` uses (default %s)", ft, err, DefaultDatabase)
		}
	}
	src, err := openStorage(ctx, from, nil)
	if err != nil {
		return transfer.Report{}, fmt.Errorf("transfer: the source: %w", err)
	}
	defer src.close()
	srcSide := transfer.Side{DB: src.db, Saver: src.saver, Store: src.store}
	if opts.DryRun {
		return transfer.Run(ctx, srcSide, transfer.Side{}, opts)
	}
	dst, err := openStorage(ctx, to, nil) // vectors are not copied: see docs/memory.md
	if err != nil {
		return transfer.Report{}, fmt.Errorf("transfer: the target: %w", err)
	}
	defer dst.close()
	quiet := slog.New(slog.DiscardHandler)
	if err := queue.Migrate(ctx, queue.Config{SQLite: dst.river, Postgres: dst.pool, Logger: quiet}); err != nil {
		return transfer.Report{}, fmt.Errorf("transfer: migrate the target's queue tables: %w", err)
	}
	rep, err := transfer.Run(ctx, srcSide, transfer.Side{DB: dst.db, Saver: dst.saver, Store: dst.store}, opts)
	return rep, err
}

// sameTarget reports whether two database targets of one kind are the
// same database: one file, or one URL.
func sameTarget(kind, a, b string) bool {
	if kind != "sqlite" {
		return a == b
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}
