package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/trellis-agents/trellis/server"
)

// migrateCommand is `trellis migrate`: bring a database to this version's
// schema without serving, e.g. before rolling out new replicas.
func migrateCommand() *cobra.Command {
	var database string
	c := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the service's schema migrations to a database and exit",
		Long: `Apply every schema migration this version of Trellis has — the service's
tables, checkpoints, store and run queue (River) — to the database, then exit.
serve does the same on start; on PostgreSQL every step runs under one advisory
lock on the schema, so running this while replicas start is safe.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			if err := server.Migrate(c.Context(), database, log); err != nil {
				return err
			}
			where := database
			if where == "" {
				where = server.DefaultDatabase
			}
			fmt.Fprintf(c.OutOrStdout(), "%s is up to date\n", where)
			return nil
		},
	}
	c.Flags().StringVar(&database, "database", "", "SQLite file, sqlite://PATH or postgres:// URL (default "+server.DefaultDatabase+")")
	return c
}
