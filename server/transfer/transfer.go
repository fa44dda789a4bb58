// Package transfer copies everything a Trellis service keeps — every
// tenant's assistants (all versions), threads, checkpoint-metadata
// overlays, runs with their event logs and leases, crons and API keys, the
// checkpoints of every thread in every namespace with their blobs and
// pending writes, and the long-term store — from one backend to another:
// `trellis transfer --from sqlite://… --to postgres://…`.
//
// It works through the optional export interfaces of the three stores
// (db.Exporter, checkpoint.Exporter, store.Exporter), page by page, so
// memory stays bounded by the batch size whatever the database holds.
//
// It is re-runnable: rows and store items the target has already (same
// key) are skipped and counted, never overwritten; a thread namespace the
// target has is continued from its newest checkpoint when that checkpoint
// is the source's, and refused (checkpoint.ErrDiverged) otherwise. A copy
// interrupted half way is finished by running it again.
package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/store"
)

// Side is one end of a transfer: the service's store of record, its
// checkpoint saver and its store. The source's three must implement their
// package's Exporter; the target's db and store must as well (they import).
type Side struct {
	DB    db.DB
	Saver checkpoint.Saver
	Store store.Store
}

// Options tune Run.
type Options struct {
	// DryRun counts what the source holds and writes nothing.
	DryRun bool
	// Batch is how many rows, threads or items are read (and written, in
	// one transaction) at a time (DefaultBatch when 0).
	Batch int
	// Progress receives a line per table, per store and every few
	// hundred threads (nil: none).
	Progress io.Writer
	// Workers is how many threads' checkpoints are copied at once
	// (DefaultWorkers when 0): each checkpoint is a write transaction on
	// the target, so overlapping them hides the round trips.
	Workers int
}

// DefaultWorkers is Options.Workers' default.
const DefaultWorkers = 4

// DefaultBatch is Options.Batch's default.
const DefaultBatch = 500

// Count is what happened to one kind of record: Total read from the
// source, Copied written to the target; the rest the target had already.
type Count struct {
	Name   string
	Total  int
	Copied int
}

// Report is what Run did (or, for a dry run, would look at).
type Report struct {
	// Tables counts the store of record's rows, table by table.
	Tables []Count
	// Threads and Namespaces count the saver's thread namespaces;
	// Checkpoints the checkpoints (Copied: written, the rest the target
	// had); Writes the pending writes written.
	Threads     int
	Namespaces  int
	Checkpoints Count
	Writes      int
	// Items counts the store's live items.
	Items Count
}

type exportingSaver interface {
	checkpoint.Saver
	checkpoint.Exporter
}

// Run copies everything from src to dst (see the package documentation)
// and reports what it did. Stop the servers on the source first (or copy
// a backup of it): rows written during a transfer may be missed.
func Run(ctx context.Context, src, dst Side, opts Options) (Report, error) {
	var rep Report
	batch := opts.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", args...)
		}
	}
	sdb, ok := src.DB.(db.Exporter)
	if !ok {
		return rep, fmt.Errorf("transfer: the source's store of record (%T) cannot be exported", src.DB)
	}
	ssaver, ok := src.Saver.(exportingSaver)
	if !ok {
		return rep, fmt.Errorf("transfer: the source's checkpoint saver (%T) cannot list its threads", src.Saver)
	}
	sstore, ok := src.Store.(store.Exporter)
	if !ok {
		return rep, fmt.Errorf("transfer: the source's store (%T) cannot be exported", src.Store)
	}
	var ddb db.Exporter
	var dstore store.Exporter
	if !opts.DryRun {
		if ddb, ok = dst.DB.(db.Exporter); !ok {
			return rep, fmt.Errorf("transfer: the target's store of record (%T) cannot import rows", dst.DB)
		}
		if dstore, ok = dst.Store.(store.Exporter); !ok {
			return rep, fmt.Errorf("transfer: the target's store (%T) cannot import items", dst.Store)
		}
	}

	// The store of record, table by table in reference order.
	for _, tb := range db.Tables {
		c := Count{Name: tb.Name}
		var after db.Row
		for {
			rows, err := sdb.ExportRows(ctx, tb, after, batch)
			if err != nil {
				return rep, fmt.Errorf("transfer: read %s: %w", tb.Name, err)
			}
			c.Total += len(rows)
			if !opts.DryRun && len(rows) > 0 {
				n, err := ddb.ImportRows(ctx, tb, rows)
				if err != nil {
					return rep, fmt.Errorf("transfer: write %s: %w", tb.Name, err)
				}
				c.Copied += n
			}
			if len(rows) < batch {
				break
			}
			after = rows[len(rows)-1]
		}
		rep.Tables = append(rep.Tables, c)
		progress("%-28s %s", tb.Name, counted(c, opts.DryRun))
	}

	// Checkpoints, thread by thread, Workers threads at a time.
	rep.Checkpoints.Name = "checkpoints"
	if err := copyThreads(ctx, ssaver, dst.Saver, opts, batch, &rep, progress); err != nil {
		return rep, err
	}
	progress("%-28s %d threads, %d namespaces, %s, %d pending writes", "checkpoints", rep.Threads, rep.Namespaces,
		counted(rep.Checkpoints, opts.DryRun), rep.Writes)

	// The long-term store.
	rep.Items.Name = "store items"
	var cursor *store.Item
	for {
		items, err := sstore.ExportItems(ctx, cursor, batch)
		if err != nil {
			return rep, fmt.Errorf("transfer: %w", err)
		}
		rep.Items.Total += len(items)
		if !opts.DryRun && len(items) > 0 {
			n, err := dstore.ImportItems(ctx, items)
			if err != nil {
				return rep, fmt.Errorf("transfer: %w", err)
			}
			rep.Items.Copied += n
		}
		if len(items) < batch {
			break
		}
		cursor = items[len(items)-1]
	}
	progress("%-28s %s", "store", counted(rep.Items, opts.DryRun))
	return rep, nil
}

// copyThreads copies (or, for a dry run, counts) every thread of src's
// saver into dst with opts.Workers goroutines; the first error stops it.
func copyThreads(ctx context.Context, src exportingSaver, dst checkpoint.Saver, opts Options, batch int, rep *Report, progress func(string, ...any)) error {
	workers := opts.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex // guards rep
	threads := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for th := range threads {
				var one Report
				var err error
				if opts.DryRun {
					err = countThread(ctx, src, th, batch, &one)
				} else {
					var st checkpoint.CopyStats
					st, err = checkpoint.CopyTo(ctx, src, dst, th)
					one.Namespaces, one.Writes = st.Namespaces, st.Writes
					one.Checkpoints = Count{Total: st.Checkpoints + st.Skipped, Copied: st.Checkpoints}
				}
				mu.Lock()
				rep.Threads++
				rep.Namespaces += one.Namespaces
				rep.Writes += one.Writes
				rep.Checkpoints.Total += one.Checkpoints.Total
				rep.Checkpoints.Copied += one.Checkpoints.Copied
				if rep.Threads%500 == 0 {
					progress("checkpoints: %d threads so far", rep.Threads)
				}
				mu.Unlock()
				if err != nil {
					cancel(fmt.Errorf("transfer: %w", err))
				}
			}
		})
	}
	var listErr error
list:
	for after := ""; ; {
		page, err := src.Threads(ctx, after, batch)
		if err != nil {
			listErr = fmt.Errorf("transfer: %w", err)
			break
		}
		for _, th := range page {
			select {
			case threads <- th:
			case <-ctx.Done():
				break list
			}
		}
		if len(page) < batch {
			break
		}
		after = page[len(page)-1]
	}
	close(threads)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if listErr != nil {
		return listErr
	}
	return ctx.Err()
}

// countThread counts a thread's namespaces and checkpoints (a dry run).
func countThread(ctx context.Context, s exportingSaver, thread string, batch int, rep *Report) error {
	nss, err := s.Namespaces(ctx, thread)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	for _, ns := range nss {
		rep.Namespaces++
		ref := checkpoint.Ref{ThreadID: thread, Namespace: ns}
		for {
			ids, err := s.CheckpointIDs(ctx, ref, batch)
			if err != nil {
				return fmt.Errorf("transfer: %w", err)
			}
			rep.Checkpoints.Total += len(ids)
			if len(ids) < batch {
				break
			}
			ref.ID = ids[len(ids)-1]
		}
	}
	return nil
}

func counted(c Count, dry bool) string {
	if dry {
		return fmt.Sprintf("%d %s (dry run: nothing written)", c.Total, unit(c.Name))
	}
	return fmt.Sprintf("%d %s: %d copied, %d already in the target", c.Total, unit(c.Name), c.Copied, c.Total-c.Copied)
}

func unit(name string) string {
	switch name {
	case "checkpoints":
		return "checkpoints"
	case "store items":
		return "items"
	}
	return "rows"
}

// ErrSameDatabase is returned by callers that find the source and the
// target are one database.
var ErrSameDatabase = errors.New("transfer: the source and the target are the same database")
