package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis-agents/trellis/server"
	"github.com/trellis-agents/trellis/server/db"
)

// keysCommand is `trellis keys create|list|revoke`: the API keys of the
// database serve uses (the same --database, or the config file's).
func keysCommand() *cobra.Command {
	var database, configPath string
	c := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke the API keys of trellis serve",
		Long: `API keys authenticate requests to trellis serve (Authorization: Bearer KEY or
X-Api-Key: KEY). Each key belongs to one tenant, whose assistants, threads,
runs and store items no other tenant's key can see. Once a key exists, every
request but /ok, /info and /openapi.json needs one. Only a hash of each key is
stored: create prints the key once.`,
	}
	pf := c.PersistentFlags()
	pf.StringVar(&database, "database", "", "SQLite file, sqlite://PATH or postgres:// URL (default: the config file's, else "+server.DefaultDatabase+")")
	pf.StringVar(&configPath, "config", "", "config file (default ./"+DefaultConfigFile+" when it exists), for its database")
	open := func(c *cobra.Command) (*server.Keys, error) {
		d := database
		if d == "" {
			file, err := loadConfig(configPath)
			if err != nil {
				return nil, err
			}
			d = file.Database
		}
		return server.OpenKeys(c.Context(), d)
	}

	var tenant, name string
	create := &cobra.Command{
		Use:   "create --tenant NAME",
		Short: "Create a key for a tenant and print it (once)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if tenant == "" {
				return fmt.Errorf("--tenant is required (the tenant \"default\" holds what was stored while auth was off)")
			}
			k, err := open(c)
			if err != nil {
				return err
			}
			defer k.Close()
			secret, key, err := k.Create(c.Context(), tenant, name)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), secret)
			fmt.Fprintf(c.ErrOrStderr(), "created key %s for tenant %q; it is shown only now, store it safely\n", key.ID, key.Tenant)
			return nil
		},
	}
	create.Flags().StringVar(&tenant, "tenant", "", "the tenant the key belongs to (required)")
	create.Flags().StringVar(&name, "name", "", "a label for the key, shown by list")

	var listTenant string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the keys (ID, tenant, name, prefix, created, last used, revoked)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			k, err := open(c)
			if err != nil {
				return err
			}
			defer k.Close()
			keys, err := k.List(c.Context(), listTenant)
			if err != nil {
				return err
			}
			printKeys(c, keys)
			return nil
		},
	}
	list.Flags().StringVar(&listTenant, "tenant", "", "only this tenant's keys")

	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke a key (by the ID list shows); requests with it are refused from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			k, err := open(c)
			if err != nil {
				return err
			}
			defer k.Close()
			key, err := k.Revoke(c.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "revoked key %s (tenant %q, %s...) at %s\n", key.ID, key.Tenant, key.Prefix, key.RevokedAt.Format(time.RFC3339))
			return nil
		},
	}
	c.AddCommand(create, list, revoke)
	return c
}

func printKeys(c *cobra.Command, keys []db.Key) {
	w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTENANT\tNAME\tPREFIX\tCREATED\tLAST USED\tREVOKED")
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04")
	}
	for _, k := range keys {
		name := k.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s...\t%s\t%s\t%s\n", k.ID, k.Tenant, name, k.Prefix, when(k.CreatedAt), when(k.LastUsedAt), when(k.RevokedAt))
	}
	w.Flush()
}
