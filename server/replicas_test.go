package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/sse"
)

// Two replicas on one PostgreSQL and one Redis: a run executing on one is
// streamed and cancelled through the other.
func TestReplicasShareRunsThroughRedis(t *testing.T) {
	url, _, _ := pgSchema(t, "serve")
	redis := "redis://" + testenv.RedisAddr(t)
	var blockedA, blockedB atomic.Int32
	a := start(t, Config{Database: url, Redis: redis, DataDir: t.TempDir()}, &blockedA)
	b := start(t, Config{Database: url, Redis: redis, DataDir: t.TempDir()}, &blockedB)

	body := `{"assistant_id":"echo","input":{"log":["block"]},"if_not_exists":"create","stream_mode":["values"]}`
	resp, err := http.Post(a.url+"/threads/rep/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		RunID string `json:"run_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil || resp.StatusCode != 200 {
		t.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	for end := time.Now().Add(20 * time.Second); blockedA.Load()+blockedB.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the run never started")
		}
	}
	// The replica not executing the run serves its stream and its cancel.
	other := b
	if blockedB.Load() > 0 {
		other = a
	}
	stream, err := http.Get(other.url + "/threads/rep/runs/" + run.RunID + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := make(chan string, 16)
	go func() {
		defer close(events)
		rd := sse.NewReader(stream.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			events <- ev.Event
		}
	}()
	if ev := <-events; ev != "metadata" {
		t.Fatalf("the other replica's stream began with %q", ev)
	}
	t0 := time.Now()
	cancel, err := http.Post(other.url+"/threads/rep/runs/"+run.RunID+"/cancel?wait=1", "application/json", bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	cancel.Body.Close()
	if cancel.StatusCode >= 300 {
		t.Fatalf("cancel through the other replica: %d", cancel.StatusCode)
	}
	t.Logf("cancel through the other replica took effect in %v", time.Since(t0))
	var rest []string
	for ev := range events {
		rest = append(rest, ev)
	}
	if len(rest) == 0 || rest[len(rest)-1] != "end" {
		t.Fatalf("the other replica's stream ended with %v, want ... end", rest)
	}
	if got := waitRun(t, other.s.st.db, "rep", run.RunID); got.Status != db.RunInterrupted {
		t.Fatalf("run status %s, want interrupted", got.Status)
	}
}
