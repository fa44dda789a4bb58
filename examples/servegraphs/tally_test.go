package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server"
	"github.com/trellis-agents/trellis/server/runs"
)

// The tally workflow served over the LangGraph API: two runs on one thread,
// the second adding to the first's total (the workflow's previous output).
func TestTallyServed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := server.New(ctx, server.Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "s.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register("tally", runs.GraphSpec{New: newTally}); err != nil {
		srv.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatal(err)
	}
	base := "http://" + srv.Addr()
	post := func(path, body string) map[string]any {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s %s: %d %s", path, body, resp.StatusCode, b)
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, b)
		}
		return out
	}
	thread := post("/threads", `{}`)["thread_id"].(string)
	var last map[string]any
	for _, text := range []string{"one two three", "four five"} {
		last = post("/threads/"+thread+"/runs/wait", `{"assistant_id":"tally","input":{"input":"`+text+`"}}`)
	}
	out, _ := last["output"].(map[string]any)
	if out["words"] != float64(2) || out["total"] != float64(5) {
		t.Errorf("after two runs: %v, want output words 2 total 5", last)
	}
}
