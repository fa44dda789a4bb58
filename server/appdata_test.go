package server

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/apps/scheduler"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// The scheduler keeps a calendar per thread; deleting the thread through
// the API (DELETE /threads/{id}) and expiring it by its TTL delete that
// calendar too, and leave other threads' calendars alone.
func TestThreadDeleteRemovesAppData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(dir, "t.db"), DataDir: dir, Logger: quiet(), ThreadSweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterApps(catalog.All(), Models{}); err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	store, err := scheduler.Open(ctx, s.SQLiteFile())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	assistant := DefaultAssistantID("scheduler")
	scope := func(thread string) string { return runs.ThreadKey(api.DefaultTenant, thread) }
	planned := func(thread, create string) {
		t.Helper()
		if code, out, _ := post(t, r.url+"/threads", create); code != 200 {
			t.Fatalf("create %s: %d %s", thread, code, out)
		}
		code, out, _ := post(t, r.url+"/threads/"+thread+"/runs/wait",
			`{"assistant_id":"`+assistant+`","input":{"messages":[{"role":"user","content":"Plan my week."}]}}`)
		if code != 200 {
			t.Fatalf("run on %s: %d %s", thread, code, out)
		}
		// The scripted run may stop at a confirmation before any tool
		// read the calendar; seeding is a no-op when it did.
		if _, err := store.Seed(ctx, scope(thread), scheduler.Sample()); err != nil {
			t.Fatal(err)
		}
	}
	has := func(thread string) bool {
		t.Helper()
		_, err := store.Load(ctx, scope(thread))
		if err != nil && !errors.Is(err, scheduler.ErrNoSchedule) {
			t.Fatal(err)
		}
		return err == nil
	}
	planned("gone", `{"thread_id":"gone"}`)
	planned("kept", `{"thread_id":"kept"}`)
	planned("old", `{"thread_id":"old","ttl":{"ttl":60,"strategy":"delete"}}`)
	if !has("gone") || !has("kept") || !has("old") {
		t.Fatal("the threads have no calendars before the deletes")
	}

	req, _ := http.NewRequest(http.MethodDelete, r.url+"/threads/gone", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /threads/gone: %d", resp.StatusCode)
	}
	if has("gone") {
		t.Error("the deleted thread's calendar is still there")
	}
	if !has("kept") || !has("old") {
		t.Error("deleting one thread deleted another's calendar")
	}

	if n, err := s.sweepThreads(ctx, time.Now().Add(3*time.Hour)); err != nil || n != 1 {
		t.Fatalf("sweep: %d threads, %v; want 1", n, err)
	}
	if has("old") {
		t.Error("the expired thread's calendar is still there")
	}
	if !has("kept") {
		t.Error("the sweep deleted a live thread's calendar")
	}
	if _, err := s.st.db.GetThread(ctx, api.DefaultTenant, "old"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("the expired thread: %v; want it gone", err)
	}
}

// scoped is an app that keeps data per scope in memory, for the server's
// deletion hooks.
type scoped struct {
	mu   sync.Mutex
	data map[string]bool
}

func (d *scoped) has(scope string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.data[scope]
}

func (d *scoped) entry() apps.Entry {
	return apps.Entry{Name: "scoped", Summary: "keeps data per thread", Script: func() llm.Model { return llmtest.New() },
		Open: func(context.Context, apps.Env) (*apps.App, error) {
			b := graph.New(react.Messages)
			b.AddNode("keep", func(ctx context.Context, _ graph.State) (graph.Output, error) {
				d.mu.Lock()
				defer d.mu.Unlock()
				d.data[apps.Scope(ctx)] = true
				return graph.Writes(graph.Append(react.Messages, llm.Assistant("kept"))), nil
			})
			b.SetEntry("keep")
			b.AddEdge("keep", graph.END)
			g, err := b.Compile()
			if err != nil {
				return nil, err
			}
			return &apps.App{Name: "scoped", Graph: g, Close: apps.Closer(),
				DeleteScope: func(_ context.Context, scope string) error {
					d.mu.Lock()
					defer d.mu.Unlock()
					delete(d.data, scope)
					return nil
				}}, nil
		}}
}

// A stateless run (POST /runs/wait without a thread) runs on a temporary
// thread that is deleted when the run ends: the data its app keeps for it
// goes too, while a kept thread's stays.
func TestTemporaryThreadRemovesAppData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(dir, "t.db"), DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	d := &scoped{data: map[string]bool{}}
	if err := s.RegisterApps([]apps.Entry{d.entry()}, Models{}); err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	run := `{"assistant_id":"` + DefaultAssistantID("scoped") + `","input":{"messages":[{"role":"user","content":"hi"}]}}`
	if code, out, _ := post(t, r.url+"/threads", `{"thread_id":"kept"}`); code != 200 {
		t.Fatalf("create: %d %s", code, out)
	}
	if code, out, _ := post(t, r.url+"/threads/kept/runs/wait", run); code != 200 {
		t.Fatalf("run: %d %s", code, out)
	}
	if code, out, _ := post(t, r.url+"/runs/wait", run); code != 200 {
		t.Fatalf("stateless run: %d %s", code, out)
	}
	// A wait deletes its temporary thread after the run's last event,
	// which may reach the client first.
	var scopes []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		d.mu.Lock()
		scopes = slices.Sorted(maps.Keys(d.data))
		d.mu.Unlock()
		if len(scopes) < 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(scopes) != 1 || !d.has(runs.ThreadKey(api.DefaultTenant, "kept")) {
		t.Errorf("app data kept for %q; want only the kept thread's", scopes)
	}
}
