package api

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

func TestThreadCRUD(t *testing.T) {
	e := newResEnv(t, false)
	var th wire.Thread
	e.must(200, &th, "POST", "/threads", map[string]any{"thread_id": "t1", "metadata": map[string]any{"graph_id": "chat", "n": 1}})
	if th.ThreadID != "t1" || th.Status != "idle" || th.Metadata["n"] != float64(1) || th.Values != nil {
		t.Fatalf("created %+v", th)
	}
	e.problem(409, "", "POST", "/threads", map[string]any{"thread_id": "t1"})
	e.must(200, &th, "POST", "/threads", map[string]any{"thread_id": "t1", "if_exists": "do_nothing"})
	e.problem(422, "/if_exists", "POST", "/threads", map[string]any{"if_exists": "sometimes"})
	e.problem(422, "/ttl", "POST", "/threads", map[string]any{"ttl": -1})
	var gen wire.Thread
	e.must(200, &gen, "POST", "/threads", "")
	if gen.ThreadID == "" {
		t.Fatal("no generated thread ID")
	}

	e.must(200, &th, "GET", "/threads/t1", nil)
	e.problem(404, "", "GET", "/threads/nope", nil)
	e.must(200, &th, "PATCH", "/threads/t1", map[string]any{"metadata": map[string]any{"m": "x"}})
	if th.Metadata["m"] != "x" || th.Metadata["n"] != float64(1) {
		t.Fatalf("patched metadata %v", th.Metadata)
	}
	st, body := e.do("PATCH", "/threads/t1", map[string]any{"metadata": map[string]any{"m": "y"}}, "Prefer", "return=minimal")
	if st != 204 || len(body) != 0 {
		t.Fatalf("return=minimal: %d %q", st, body)
	}
	e.problem(404, "", "PATCH", "/threads/nope", map[string]any{"metadata": map[string]any{}})

	// A run gives the thread values; search and count see them.
	e.run(DefaultTenant, "t1", `{"log":["x"]}`)
	e.must(200, &th, "GET", "/threads/t1", nil)
	if v, _ := th.Values.(map[string]any); v == nil || len(v["log"].([]any)) != 2 {
		t.Fatalf("values after a run: %v", th.Values)
	}
	var found []map[string]any
	e.must(200, &found, "POST", "/threads/search", map[string]any{"metadata": map[string]any{"m": "y"}, "select": []string{"thread_id", "status"}})
	if len(found) != 1 || found[0]["thread_id"] != "t1" || len(found[0]) != 2 {
		t.Fatalf("search %v", found)
	}
	e.must(200, &found, "POST", "/threads/search", map[string]any{"values": map[string]any{"log": []string{"x"}}})
	if len(found) != 1 {
		t.Fatalf("search by values: %v", found)
	}
	// title (a Trellis extension) matches part of metadata.title, any case.
	e.must(200, &th, "PATCH", "/threads/t1", map[string]any{"metadata": map[string]any{"title": "Plan the Offsite"}})
	e.must(200, &found, "POST", "/threads/search", map[string]any{"title": "OFFSITE"})
	if len(found) != 1 || found[0]["thread_id"] != "t1" {
		t.Fatalf("search by title: %v", found)
	}
	e.must(200, &found, "POST", "/threads/search", map[string]any{"title": "budget"})
	if len(found) != 0 {
		t.Fatalf("search by a title no thread has: %v", found)
	}
	var titled int
	e.must(200, &titled, "POST", "/threads/count", map[string]any{"title": "offsite"})
	if titled != 1 {
		t.Fatalf("count by title %d, want 1", titled)
	}
	e.problem(422, "/status", "POST", "/threads/search", map[string]any{"status": "sleepy"})
	e.problem(422, "/limit", "POST", "/threads/search", map[string]any{"limit": 5000})
	var n int
	e.must(200, &n, "POST", "/threads/count", map[string]any{})
	if n != 2 {
		t.Fatalf("count %d, want 2", n)
	}
	e.must(200, &n, "POST", "/threads/count", map[string]any{"status": "idle", "metadata": map[string]any{"graph_id": "chat"}})
	if n != 1 {
		t.Fatalf("count with filters %d, want 1", n)
	}

	// Copy keeps the state under a new ID.
	var cp wire.Thread
	e.must(200, &cp, "POST", "/threads/t1/copy", nil)
	if cp.ThreadID == "t1" || cp.ThreadID == "" {
		t.Fatalf("copy %+v", cp)
	}
	var s wire.ThreadState
	e.must(200, &s, "GET", "/threads/"+cp.ThreadID+"/state", nil)
	if v, _ := s.Values.(map[string]any); v == nil || len(v["log"].([]any)) != 2 {
		t.Fatalf("copied state %v", s.Values)
	}
	e.problem(404, "", "POST", "/threads/nope/copy", nil)

	// Tenant isolation.
	o := []string{resTenantHeader, "other"}
	e.problem(404, "", "GET", "/threads/t1", nil, o...)
	e.problem(404, "", "PATCH", "/threads/t1", map[string]any{}, o...)
	e.problem(404, "", "DELETE", "/threads/t1", nil, o...)
	e.problem(404, "", "POST", "/threads/t1/copy", nil, o...)
	e.problem(404, "", "GET", "/threads/t1/state", nil, o...)
	e.must(200, &n, "POST", "/threads/count", map[string]any{}, o...)
	if n != 0 {
		t.Fatalf("other tenant counts %d threads", n)
	}

	// Delete removes the row and the checkpoints.
	e.must(204, nil, "DELETE", "/threads/t1", nil)
	e.problem(404, "", "GET", "/threads/t1", nil)
	e.problem(404, "", "DELETE", "/threads/t1", nil)
	if tup, err := e.api.Saver.Get(t.Context(), resRefOf(DefaultTenant, "t1")); err == nil {
		t.Fatalf("checkpoint left after delete: %+v", tup.Ref)
	}

	// Prune: delete counts the threads that existed; keep_latest keeps the state.
	var pr wire.ThreadPruneResult
	e.must(200, &pr, "POST", "/threads/prune", map[string]any{"thread_ids": []string{gen.ThreadID, "nope"}})
	if pr.PrunedCount != 1 {
		t.Fatalf("pruned %d, want 1", pr.PrunedCount)
	}
	e.must(200, &pr, "POST", "/threads/prune", map[string]any{"thread_ids": []string{cp.ThreadID}, "strategy": "keep_latest"})
	var hist []wire.ThreadState
	e.must(200, &hist, "POST", "/threads/"+cp.ThreadID+"/history", map[string]any{})
	if pr.PrunedCount != 1 || len(hist) != 1 {
		t.Fatalf("keep_latest: pruned %d, %d states left", pr.PrunedCount, len(hist))
	}
	e.problem(422, "/strategy", "POST", "/threads/prune", map[string]any{"thread_ids": []string{"x"}, "strategy": "all"})
	e.problem(422, "/thread_ids/0", "POST", "/threads/prune", map[string]any{"thread_ids": []string{""}})
}

func TestThreadSupersteps(t *testing.T) {
	e := newResEnv(t, false)
	var th wire.Thread
	e.must(200, &th, "POST", "/threads", map[string]any{"thread_id": "s1", "metadata": map[string]any{"graph_id": "chat"},
		"supersteps": []any{
			map[string]any{"updates": []any{map[string]any{"values": map[string]any{"log": []string{"a"}}, "as_node": "__start__"}}},
			map[string]any{"updates": []any{map[string]any{"values": map[string]any{"log": []string{"b"}}, "as_node": "greet"}}},
		}})
	v, _ := th.Values.(map[string]any)
	if v == nil || strings.Join(resStrings(v["log"]), ",") != "a,b" {
		t.Fatalf("values after supersteps: %v", th.Values)
	}
	var s wire.ThreadState
	e.must(200, &s, "GET", "/threads/s1/state", nil)
	if strings.Join(s.Next, ",") != "route" {
		t.Fatalf("next after an update as greet: %v", s.Next)
	}
	e.problem(422, "/supersteps/0/updates/0/as_node", "POST", "/threads", map[string]any{"metadata": map[string]any{"graph_id": "chat"},
		"supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": map[string]any{}, "as_node": "nope"}}}}})
	e.problem(422, "/supersteps/0/updates/0/values", "POST", "/threads", map[string]any{"metadata": map[string]any{"graph_id": "chat"},
		"supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": map[string]any{"colour": 1}, "as_node": "greet"}}}}})
	e.problem(422, "/metadata/graph_id", "POST", "/threads", map[string]any{
		"supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": map[string]any{}, "as_node": "greet"}}}}})
	e.problem(422, "/supersteps/0/updates/0/as_node", "POST", "/threads", map[string]any{
		"supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": map[string]any{}}}}}})
	var n int
	e.must(200, &n, "POST", "/threads/count", map[string]any{})
	if n != 1 {
		t.Fatalf("failed supersteps left threads behind: %d threads", n)
	}
	// A goto command picks what runs next.
	e.must(200, &th, "POST", "/threads", map[string]any{"thread_id": "s2", "metadata": map[string]any{"graph_id": "chat"},
		"supersteps": []any{map[string]any{"updates": []any{map[string]any{"command": map[string]any{"update": map[string]any{"log": []string{"c"}}, "goto": "route"}, "as_node": "greet"}}}}})
	e.must(200, &s, "GET", "/threads/s2/state", nil)
	if strings.Join(s.Next, ",") != "route" || strings.Join(resStrings(s.Values.(map[string]any)["log"]), ",") != "c" {
		t.Fatalf("after a goto command: next %v values %v", s.Next, s.Values)
	}
	e.problem(422, "/supersteps/0/updates/0/command/goto/0", "POST", "/threads", map[string]any{"metadata": map[string]any{"graph_id": "chat"},
		"supersteps": []any{map[string]any{"updates": []any{map[string]any{"command": map[string]any{"goto": "nowhere"}, "as_node": "greet"}}}}})
	e.problem(422, "/supersteps/0/updates/0/command/resume", "POST", "/threads", map[string]any{"metadata": map[string]any{"graph_id": "chat"},
		"supersteps": []any{map[string]any{"updates": []any{map[string]any{"command": map[string]any{"resume": "x"}, "as_node": "greet"}}}}})
}

// Deleting a thread cancels its running run first, and removes its
// pending ones with it.
func TestThreadDeleteCancelsRuns(t *testing.T) {
	e := newResEnv(t, false)
	ctx := context.Background()
	if _, err := e.api.Runs.Create(ctx, nil, runs.CreateRequest{Tenant: DefaultTenant, ThreadID: "busy", AssistantID: "chat",
		Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["slow"]}`)}, CreateThread: true}); err != nil {
		t.Fatal(err)
	}
	pending, err := e.api.Runs.Create(ctx, nil, runs.CreateRequest{Tenant: DefaultTenant, ThreadID: "busy", AssistantID: "chat",
		Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["x"]}`)}, MultitaskStrategy: runs.Enqueue})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := e.api.Runs.Advance(ctx, DefaultTenant, "busy"); done <- err }()
	select {
	case <-e.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow run did not start")
	}
	// The thread is busy while its run runs (as LangGraph shows it).
	var th wire.Thread
	e.must(200, &th, "GET", "/threads/busy", nil)
	if th.Status != "busy" {
		t.Fatalf("a thread with a running run is %q, want busy", th.Status)
	}
	var found []wire.Thread
	e.must(200, &found, "POST", "/threads/search", map[string]any{"status": "busy"})
	if len(found) != 1 || found[0].ThreadID != "busy" {
		t.Fatalf("search for busy threads: %+v", found)
	}
	// The state cannot be updated while a run runs.
	e.problem(409, "", "POST", "/threads/busy/state", map[string]any{"values": map[string]any{}})
	e.must(204, nil, "DELETE", "/threads/busy", nil)
	select {
	case <-done: // cancelled: Advance returned
	case <-time.After(10 * time.Second):
		t.Fatal("deleting the thread did not cancel its running run")
	}
	e.problem(404, "", "GET", "/threads/busy", nil)
	if _, err := e.db.GetRun(ctx, DefaultTenant, "busy", pending.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("pending run after delete: %v", err)
	}
}

func resStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, x := range l {
		out[i], _ = x.(string)
	}
	return out
}
