package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/runs"
)

// gateGraph's node tells started it runs, then waits for release, or for
// its run to be cancelled.
func gateGraph(started chan<- struct{}, release <-chan struct{}) runs.GraphSpec {
	return runs.GraphSpec{Description: "waits for the test", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(testLog)
		b.AddNode("gate", func(ctx context.Context, s graph.State) (graph.Output, error) {
			started <- struct{}{}
			select {
			case <-release:
				return graph.Writes(graph.Append(testLog, "released")), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		b.SetEntry("gate")
		b.AddEdge("gate", graph.END)
		return b.Compile()
	}}
}

// A runs/wait applies on_disconnect as a stream does: a client that
// leaves cancels the run (the default, and "cancel"), or with "continue"
// the run goes on and finishes.
func TestWaitDisconnect(t *testing.T) {
	for _, c := range []struct{ mode, want string }{{"", "interrupted"}, {"cancel", "interrupted"}, {"continue", "success"}} {
		t.Run("on_disconnect="+c.mode, func(t *testing.T) {
			started := make(chan struct{}, 1)
			release := make(chan struct{})
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			s, err := New(context.Background(), Config{Database: filepath.Join(t.TempDir(), "t.db"), Addr: "127.0.0.1:0", Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Register("gate", gateGraph(started, release)); err != nil {
				t.Fatal(err)
			}
			r := serveInBackground(t, s)
			t.Cleanup(free) // before the server stops (cleanups run last first)

			body := map[string]any{"assistant_id": "gate", "if_not_exists": "create", "input": map[string]any{"log": []string{"go"}}}
			if c.mode != "" {
				body["on_disconnect"] = c.mode
			}
			raw, _ := json.Marshal(body)
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			req, _ := http.NewRequestWithContext(ctx, "POST", r.url+"/threads/t1/runs/wait", bytes.NewReader(raw))
			req.Header.Set("Content-Type", "application/json")
			answered := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				answered <- err
			}()
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the run did not start")
			}
			leave()
			if err := <-answered; err == nil {
				t.Fatal("the client that left got an answer")
			}
			if c.want == "success" {
				time.Sleep(100 * time.Millisecond) // a cancel would have landed by now
				free()
			}
			if got := waitRunStatus(t, r.url, "t1", c.want); got != c.want {
				t.Errorf("the run of a client that left with on_disconnect=%q is %q, want %q", c.mode, got, c.want)
			}
		})
	}
}

// waitRunStatus waits up to 10 s for the thread's only run to reach want,
// and returns the status it last saw.
func waitRunStatus(t *testing.T, url, thread, want string) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		code, body, _ := get(t, fmt.Sprintf("%s/threads/%s/runs", url, thread))
		var list []struct {
			Status string `json:"status"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list) != 1 {
			t.Fatalf("runs of %s: %d %s", thread, code, body)
		}
		if last = list[0].Status; last == want {
			break
		}
	}
	return last
}
