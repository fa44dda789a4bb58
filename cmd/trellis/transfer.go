package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trellis-agents/trellis/server"
	"github.com/trellis-agents/trellis/server/transfer"
)

// transferCommand is `trellis transfer`: copy a service's data from one
// database to another, e.g. from the embedded SQLite file to PostgreSQL.
func transferCommand() *cobra.Command {
	var from, to string
	var dryRun bool
	var batch, workers int
	c := &cobra.Command{
		Use:   "transfer --from DATABASE --to DATABASE",
		Short: "Copy every tenant's assistants, threads, checkpoints, store and keys to another database",
		Long: `Copy everything trellis serve keeps, for every tenant — assistants with all
their versions, threads, checkpoints of every thread in every subgraph
namespace with their pending writes, checkpoint-metadata patches, runs with
their event logs, crons, API keys (hashes) and the long-term store — from
--from to --to, e.g. from the embedded SQLite file to PostgreSQL (or back,
for a backup). The target is created or migrated first.

Stop the servers on the source first (or transfer a VACUUM INTO copy of it).
Rows the target has already are skipped, never overwritten, so running the
command again finishes an interrupted transfer; a thread whose checkpoints in
the target are not the source's is refused. --dry-run counts what would be
copied and writes nothing.`,
		Example: `  trellis transfer --from sqlite://.trellis/trellis.db --to 'postgres://trellis@db/trellis?search_path=prod'
  trellis transfer --from sqlite://.trellis/trellis.db --to postgres://… --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return errors.New("give both --from and --to (a SQLite file, sqlite://PATH or postgres:// URL)")
			}
			if batch < 0 {
				return fmt.Errorf("--batch %d: give a positive number of rows per transaction", batch)
			}
			if workers < 0 {
				return fmt.Errorf("--workers %d: give a positive number of threads copied at once", workers)
			}
			rep, err := server.Transfer(c.Context(), from, to, transfer.Options{DryRun: dryRun, Batch: batch, Workers: workers, Progress: c.ErrOrStderr()})
			if err != nil {
				return err
			}
			copied := rep.Checkpoints.Copied + rep.Items.Copied
			for _, t := range rep.Tables {
				copied += t.Copied
			}
			switch {
			case dryRun:
				fmt.Fprintln(c.OutOrStdout(), "dry run: nothing was written")
			case copied == 0:
				fmt.Fprintln(c.OutOrStdout(), "the target had everything already: nothing was copied")
			default:
				fmt.Fprintf(c.OutOrStdout(), "transferred %d records; serve with --database %s\n", copied, to)
			}
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "the source: SQLite file, sqlite://PATH or postgres:// URL")
	c.Flags().StringVar(&to, "to", "", "the target: SQLite file, sqlite://PATH or postgres:// URL")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "count what would be copied; write nothing")
	c.Flags().IntVar(&batch, "batch", transfer.DefaultBatch, "rows, threads or items read and written per transaction")
	c.Flags().IntVar(&workers, "workers", transfer.DefaultWorkers, "threads whose checkpoints are copied at once")
	return c
}
