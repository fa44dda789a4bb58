package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/server/transfer"
)

// nestedGraph runs "prep", then a subgraph whose node asks for a name
// (an interrupt in the subgraph's namespace) and logs it.
func nestedGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "a subgraph that asks", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		ib := graph.New(testLog)
		ib.AddNode("ask", func(ctx context.Context, st graph.State) (graph.Output, error) {
			v, err := graph.Interrupt[string](ctx, "name?")
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(testLog, "name "+v)), nil
		})
		ib.SetEntry("ask")
		ib.AddEdge("ask", graph.END)
		inner, err := ib.Compile()
		if err != nil {
			return nil, err
		}
		b := graph.New(testLog)
		b.AddNode("prep", func(ctx context.Context, st graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(testLog, "prep")), nil
		})
		b.AddSubgraph("sub", inner)
		b.SetEntry("prep")
		b.AddEdge("prep", "sub")
		b.AddEdge("sub", graph.END)
		return b.Compile()
	}}
}

// startTransferServer serves database with the echo and nested graphs.
func startTransferServer(t *testing.T, database string) *running {
	t.Helper()
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: database, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for id, g := range map[string]runs.GraphSpec{"echo": echoGraph(nil), "nested": nestedGraph()} {
		if err := s.Register(id, g); err != nil {
			t.Fatal(err)
		}
	}
	return serveInBackground(t, s)
}

// tenantData is what the transfer test makes in one tenant.
type tenantData struct {
	assistant, waiting, done, namespace, storeNS string
}

// fillTenant makes, through the API: an assistant with two versions, a
// thread waiting on an interrupt inside a subgraph, a finished thread
// with a metadata patch on its latest checkpoint and a cron, and a store
// item.
func fillTenant(t *testing.T, c client, label string) tenantData {
	t.Helper()
	d := tenantData{storeNS: "ns-" + label}
	code, body, _ := c.do("POST", "/assistants", "", `{"graph_id":"nested","name":"v1","metadata":{"who":"`+label+`"}}`)
	d.assistant = field(t, code, body, "assistant_id")
	if code, body, _ := c.do("PATCH", "/assistants/"+d.assistant, "", `{"name":"v2","config":{"configurable":{"n":2}}}`); code != 200 {
		t.Fatalf("patch assistant: %d %s", code, body)
	}
	code, body, _ = c.do("POST", "/threads", "", `{"metadata":{"kind":"waiting","tenant":"`+label+`"},"ttl":{"strategy":"delete","ttl":600}}`)
	d.waiting = field(t, code, body, "thread_id")
	if code, body, _ := c.do("POST", "/threads/"+d.waiting+"/runs/wait", "", `{"assistant_id":"`+d.assistant+`","input":{"log":["x"]}}`); code != 200 {
		t.Fatalf("nested run: %d %s", code, body)
	}
	code, body, _ = c.do("POST", "/threads", "", `{"metadata":{"kind":"done"}}`)
	d.done = field(t, code, body, "thread_id")
	if code, body, _ := c.do("POST", "/threads/"+d.done+"/runs/wait", "", `{"assistant_id":"echo","input":{"log":["hello `+label+`"]}}`); code != 200 {
		t.Fatalf("echo run: %d %s", code, body)
	}
	if code, body, _ := c.do("PATCH", "/threads/"+d.done+"/state", "", `{"metadata":{"reviewed":"`+label+`"}}`); code != 204 {
		t.Fatalf("patch state: %d %s", code, body)
	}
	if code, body, _ := c.do("POST", "/threads/"+d.done+"/runs/crons", "", `{"assistant_id":"echo","schedule":"0 0 1 1 *","input":{"log":["cron"]}}`); code != 200 {
		t.Fatalf("cron: %d %s", code, body)
	}
	if code, body, _ := c.do("PUT", "/store/items", "", `{"namespace":["`+d.storeNS+`","deep"],"key":"k","value":{"owner":"`+label+`"}}`); code != 204 {
		t.Fatalf("store item: %d %s", code, body)
	}
	code, body, _ = c.do("GET", "/threads/"+d.waiting+"/state", "subgraphs=true", "")
	var st struct {
		Tasks []struct {
			Checkpoint struct {
				NS string `json:"checkpoint_ns"`
			} `json:"checkpoint"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || len(st.Tasks) != 1 || st.Tasks[0].Checkpoint.NS == "" {
		t.Fatalf("waiting state: %d %s", code, body)
	}
	d.namespace = st.Tasks[0].Checkpoint.NS
	return d
}

// snapshotTenant reads, through the API, everything fillTenant made, as
// decoded JSON (PostgreSQL's jsonb orders object keys its own way).
func snapshotTenant(t *testing.T, c client, d tenantData) map[string]any {
	t.Helper()
	calls := []struct{ method, path, query, body string }{
		{"GET", "/assistants/" + d.assistant, "", ""},
		{"POST", "/assistants/" + d.assistant + "/versions", "", `{}`},
		{"GET", "/threads/" + d.waiting, "", ""},
		{"GET", "/threads/" + d.done, "", ""},
		{"GET", "/threads/" + d.waiting + "/state", "subgraphs=true", ""},
		{"GET", "/threads/" + d.done + "/state", "", ""},
		{"POST", "/threads/" + d.waiting + "/history", "", `{"limit":100}`},
		{"POST", "/threads/" + d.waiting + "/history", "", `{"limit":100,"checkpoint":{"checkpoint_ns":"` + d.namespace + `"}}`},
		{"POST", "/threads/" + d.done + "/history", "", `{"limit":100}`},
		{"GET", "/threads/" + d.waiting + "/runs", "", ""},
		{"GET", "/threads/" + d.done + "/runs", "", ""},
		{"POST", "/runs/crons/search", "", `{}`},
		{"POST", "/threads/search", "", `{"limit":100}`},
		{"POST", "/store/items/search", "", `{"namespace_prefix":["` + d.storeNS + `"]}`},
		{"POST", "/store/namespaces", "", `{}`},
	}
	out := map[string]any{}
	for _, call := range calls {
		code, body, _ := c.do(call.method, call.path, call.query, call.body)
		key := call.method + " " + call.path + "?" + call.query + " " + call.body
		if code != 200 {
			t.Fatalf("%s: %d %s", key, code, body)
		}
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if strings.HasPrefix(call.path, "/store/") {
			v = micros(v)
		}
		out[key] = v
	}
	return out
}

// micros truncates the times in a decoded store answer to microseconds:
// the SQLite store keeps nanoseconds, PostgreSQL's timestamptz keeps
// microseconds.
func micros(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = micros(e)
		}
	case []any:
		for i, e := range x {
			x[i] = micros(e)
		}
	case string:
		if tm, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return tm.Truncate(time.Microsecond).Format(time.RFC3339Nano)
		}
	}
	return v
}

// A SQLite database filled through the real server (two tenants with
// keys, a thread waiting on an interrupt in a subgraph, assistant
// versions, a checkpoint-metadata patch, a cron, store items) is
// transferred to a fresh PostgreSQL schema; a server on the target answers
// every read exactly as the source's did, keys and tenants hold, the
// waiting run resumes there, and a second transfer copies nothing.
func TestTransferSQLiteToPostgres(t *testing.T) {
	pgURL, _, _ := pgSchema(t, "transfer")
	dryURL, dryschema, conn := pgSchema(t, "transfer_dry")
	file := filepath.Join(t.TempDir(), "src.db")
	keyA, keyB := mkKey(t, file, "tenant-a"), mkKey(t, file, "tenant-b")

	r := startTransferServer(t, file)
	A, B := client{t: t, base: r.url, key: keyA}, client{t: t, base: r.url, key: keyB}
	da, db := fillTenant(t, A, "a"), fillTenant(t, B, "b")
	before := map[string]map[string]any{"a": snapshotTenant(t, A, da), "b": snapshotTenant(t, B, db)}
	r.stop(t)

	ctx := context.Background()
	dry, err := Transfer(ctx, file, dryURL, transfer.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, dryschema).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("a dry run made %d tables in the target (%v)", tables, err)
	}
	var progress bytes.Buffer
	rep, err := Transfer(ctx, file, pgURL, transfer.Options{Batch: 3, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("transfer:\n%s", progress.String())
	if rep.Checkpoints.Copied == 0 || rep.Checkpoints.Copied != rep.Checkpoints.Total || rep.Namespaces <= rep.Threads ||
		rep.Items.Copied != 2 || rep.Writes == 0 {
		t.Errorf("report %+v", rep)
	}
	if rep.Checkpoints.Total != dry.Checkpoints.Total || rep.Namespaces != dry.Namespaces || rep.Items.Total != dry.Items.Total {
		t.Errorf("the dry run counted %+v, the transfer %+v", dry, rep)
	}
	for i, c := range rep.Tables {
		if c.Copied != c.Total || c.Total != dry.Tables[i].Total {
			t.Errorf("%s: %d of %d rows copied (dry run: %d)", c.Name, c.Copied, c.Total, dry.Tables[i].Total)
		}
		if c.Name == "trellis_api_keys" && c.Total != 2 {
			t.Errorf("%d keys copied, want 2", c.Total)
		}
	}
	if !strings.Contains(progress.String(), "trellis_threads") || !strings.Contains(progress.String(), "checkpoints") {
		t.Errorf("progress output:\n%s", progress.String())
	}

	// Again: everything is there already.
	again, err := Transfer(ctx, file, pgURL, transfer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	copied := again.Checkpoints.Copied + again.Items.Copied
	for _, c := range again.Tables {
		copied += c.Copied
	}
	if copied != 0 || again.Checkpoints.Total != rep.Checkpoints.Total {
		t.Errorf("a second transfer copied %d records: %+v", copied, again)
	}
	if _, err := Transfer(ctx, file, "sqlite://"+file, transfer.Options{}); !errors.Is(err, transfer.ErrSameDatabase) {
		t.Errorf("transfer onto itself: %v", err)
	}

	// And back, PostgreSQL to a new SQLite file (a backup path).
	back := filepath.Join(t.TempDir(), "back.db")
	if _, err := Transfer(ctx, pgURL, back, transfer.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{back, pgURL} {
		r = startTransferServer(t, target)
		A, B = client{t: t, base: r.url, key: keyA}, client{t: t, base: r.url, key: keyB}
		for label, c := range map[string]struct {
			c client
			d tenantData
		}{"a": {A, da}, "b": {B, db}} {
			if diff := cmp.Diff(before[label], snapshotTenant(t, c.c, c.d)); diff != "" {
				t.Errorf("tenant %s reads differently on %s (-source +target):\n%s", label, target, diff)
			}
		}
		if target == back {
			r.stop(t)
		}
	}
	if code, body, _ := B.do("GET", "/threads/"+da.waiting, "", ""); code != 404 {
		t.Errorf("B reads A's thread on the target: %d %s", code, body)
	}
	code, body, _ := A.do("POST", "/threads/"+da.waiting+"/runs/wait", "", fmt.Sprintf(`{"assistant_id":%q,"command":{"resume":"Ann"}}`, da.assistant))
	if code != 200 || !strings.Contains(body, `"name Ann"`) || !strings.Contains(body, `"prep"`) {
		t.Errorf("resuming on the target: %d %s", code, body)
	}
	if code, body, _ := A.do("GET", "/threads/"+da.waiting, "", ""); code != 200 || !strings.Contains(body, `"status":"idle"`) {
		t.Errorf("the resumed thread: %d %s", code, body)
	}
}
