// Command replica is a `trellis serve` replica for the fault tests
// (server/faulttest): it serves the "work" graph, whose nodes record every
// execution in PostgreSQL and whose second node waits for a barrier file
// the harness creates, with short leases so takeovers happen within
// seconds; and, for the load figures, the one-node "echo" graph and the
// planner app on its scripted model. It prints its URL as `trellis serve`
// does.
//
//	replica --database postgres://... --redis redis://... --name r1 --dir /tmp/x
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server"
	"github.com/trellis-agents/trellis/server/runs"
)

var steps = graph.NewKey("steps", graph.Concat[string]())

// workGraph (one run per thread): "a" records its thread and ends; "b" records its start, waits
// for the barrier file, records its end.
func workGraph(pool *pgxpool.Pool, name, dir string) runs.GraphSpec {
	record := func(ctx context.Context, node, phase string) error {
		_, err := pool.Exec(context.WithoutCancel(ctx), `INSERT INTO fault_exec (thread_id, node, phase, replica, at) VALUES ($1, $2, $3, $4, clock_timestamp())`,
			graph.ThreadID(ctx), node, phase, name)
		return err
	}
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(steps)
		b.AddNode("a", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			if err := record(ctx, "a", "start"); err != nil {
				return nil, err
			}
			if err := record(ctx, "a", "end"); err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(steps, "a")), nil
		})
		b.AddNode("b", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			if err := record(ctx, "b", "start"); err != nil {
				return nil, err
			}
			for {
				if _, err := os.Stat(filepath.Join(dir, "barrier")); err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := record(ctx, "b", "end"); err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(steps, "b")), nil
		})
		b.SetEntry("a")
		b.AddEdge("a", "b")
		b.AddEdge("b", graph.END)
		return b.Compile()
	}}
}

// echoGraph is one node that appends "echo": the load figures' graph.
func echoGraph() runs.GraphSpec {
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(steps)
		b.AddNode("echo", func(context.Context, graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(steps, "echo")), nil
		})
		b.SetEntry("echo")
		b.AddEdge("echo", graph.END)
		return b.Compile()
	}}
}

func run(ctx context.Context) error {
	database := flag.String("database", "", "postgres:// URL (required)")
	redis := flag.String("redis", "", "redis:// URL")
	name := flag.String("name", "replica", "this replica's name in the execution records")
	dir := flag.String("dir", "", "directory of the barrier file (required)")
	lease := flag.Duration("lease", 2*time.Second, "lease TTL")
	flag.Parse()
	if *database == "" || *dir == "" {
		return errors.New("--database and --dir are required")
	}
	if !strings.HasPrefix(*database, "postgres") {
		*redis = "" // one process on SQLite: nothing to relay
	}
	var pool *pgxpool.Pool // the execution records (PostgreSQL only)
	if strings.HasPrefix(*database, "postgres") {
		p, err := pgxpool.New(ctx, *database)
		if err != nil {
			return err
		}
		defer p.Close()
		pool = p
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := server.New(ctx, server.Config{
		Addr: "127.0.0.1:0", Database: *database, Redis: *redis, DataDir: *dir, Logger: log,
		LeaseTTL: *lease, SweepInterval: 300 * time.Millisecond, Workers: 150, ShutdownGrace: 3 * time.Second,
	})
	if err != nil {
		return err
	}
	if pool != nil {
		if err := srv.Register("work", workGraph(pool, *name, *dir)); err != nil {
			return errors.Join(err, srv.Close())
		}
	}
	if err := srv.Register("echo", echoGraph()); err != nil {
		return errors.Join(err, srv.Close())
	}
	// The planner app on its scripted model, as `trellis serve` runs it
	// without a model configured: the load figures' second graph.
	if err := srv.RegisterApps([]apps.Entry{planner.Entry()}, server.Models{}); err != nil {
		return errors.Join(err, srv.Close())
	}
	return srv.Run(ctx)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(1)
	}
}
