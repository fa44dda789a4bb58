package testplanner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/apps/sqlread"
	cpsqlite "github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	stsqlite "github.com/trellis-agents/trellis/store/sqlite"
	"github.com/trellis-agents/trellis/tool/mcp"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(crashChild())
	}
	goleak.VerifyTestMain(m)
}

const (
	project = "shop"
	envName = "test"
	thread  = "plan-1"
)

// env is everything a planner run needs, in one directory: the sample
// database (read-only), the sample MCP server, and a state file holding
// both the checkpoints and the store.
type env struct {
	dir    string
	db     *sqlread.SQLiteDB
	client *mcp.Client
	store  *stsqlite.Store
	saver  *cpsqlite.Saver
}

// openEnv opens (creating what is missing) the files under dir. The
// returned closer releases everything; tests register it with Cleanup.
func openEnv(ctx context.Context, dir string) (*env, func(), error) {
	e := &env{dir: dir}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*env, func(), error) { closeAll(); return nil, nil, err }
	dbPath := filepath.Join(dir, "shop.db")
	if _, err := CreateSampleDB(ctx, dbPath); err != nil {
		return fail(err)
	}
	var err error
	if e.db, err = sqlread.OpenReadOnly(ctx, dbPath); err != nil {
		return fail(err)
	}
	closers = append(closers, func() { e.db.Close() })
	if e.client, err = ConnectSample(ctx); err != nil {
		return fail(err)
	}
	closers = append(closers, func() { e.client.Close() })
	state := filepath.Join(dir, "state.db")
	if e.store, err = stsqlite.Open(ctx, state); err != nil {
		return fail(err)
	}
	closers = append(closers, func() { e.store.Close() })
	if e.saver, err = cpsqlite.Open(ctx, state); err != nil {
		return fail(err)
	}
	closers = append(closers, func() { e.saver.Close() })
	return e, closeAll, nil
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e, closeFn, err := openEnv(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return e
}

func (e *env) config(m llm.Model) Config {
	return Config{Model: m, Tools: e.client, DB: e.db, Project: project, Environment: envName}
}

func (e *env) graph(t *testing.T, m llm.Model) *graph.Graph {
	t.Helper()
	g, err := NewGraph(e.config(m))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// durable are the run options of a resumable run.
func (e *env) durable() []graph.RunOption {
	return []graph.RunOption{graph.WithCheckpointer(e.saver), graph.WithThread(thread), graph.WithStore(e.store)}
}

func (e *env) namespace() []string {
	return Config{Project: project, Environment: envName}.Namespace(thread)
}
