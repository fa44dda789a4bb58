package server

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// modelGate wraps a model so that, once armed, the next request waits for
// the test to release it (or for its context to end), so that a kill
// lands while the remote works.
type modelGate struct {
	llm.Model
	mu      sync.Mutex
	armed   bool
	reached chan struct{} // closed when an armed request arrives
	release chan struct{} // closed by the test to let it go on
}

// arm makes the next request wait; it returns the channels of this round.
func (g *modelGate) arm() (reached, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.reached, g.release = true, make(chan struct{}), make(chan struct{})
	return g.reached, g.release
}

func (g *modelGate) wait(ctx context.Context) error {
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return nil
	}
	g.armed = false
	reached, release := g.reached, g.release
	g.mu.Unlock()
	close(reached)
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *modelGate) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.Model.Generate(ctx, req)
}

func (g *modelGate) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		if err := g.wait(ctx); err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for c, err := range g.Model.Stream(ctx, req) {
			if !yield(c, err) {
				return
			}
		}
	}
}

// hopSide drives the local side of the hop over its API as a person's
// client would.
type hopSide struct {
	t      *testing.T
	client *http.Client
	url    string
	thread string
}

func (h *hopSide) post(path string, body any) (int, string) {
	h.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := h.client.Post(h.url+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// run starts a run on the thread and returns its ID.
func (h *hopSide) run(body map[string]any) string {
	h.t.Helper()
	body["assistant_id"] = hopAssistant
	body["stream_mode"] = []string{"values", "custom"}
	body["durability"] = "sync"
	code, out := h.post("/threads/"+h.thread+"/runs", body)
	var r struct {
		RunID string `json:"run_id"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &r) != nil || r.RunID == "" {
		h.t.Fatalf("start a run: %d %s", code, out)
	}
	return r.RunID
}

// ended waits for the run to end and returns its status.
func (h *hopSide) ended(run string) string {
	h.t.Helper()
	var status string
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		resp, err := h.client.Get(h.url + "/threads/" + h.thread + "/runs/" + run)
		if err != nil {
			h.t.Fatal(err)
		}
		var r struct {
			Status string `json:"status"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if status = r.Status; status != "pending" && status != "running" {
			break
		}
	}
	return status
}

// hopState is the part of a thread's state the test reads.
type hopState struct {
	Values struct {
		Messages []struct {
			Type    string `json:"type"`
			Content any    `json:"content"`
		} `json:"messages"`
	} `json:"values"`
	Interrupts []struct {
		Value json.RawMessage `json:"value"`
	} `json:"interrupts"`
}

func (h *hopSide) state(url, thread string) (hopState, string) {
	h.t.Helper()
	resp, err := h.client.Get(url + "/threads/" + thread + "/state")
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var st hopState
	if err := json.Unmarshal(b, &st); err != nil {
		h.t.Fatalf("the state of %s: %v: %s", thread, err, b)
	}
	return st, string(b)
}

func hopKill(t *testing.T, c *exec.Cmd) {
	t.Helper()
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
}

// graphInterrupt wraps an interrupt's value for planexec's decoders.
func graphInterrupt(v json.RawMessage) graph.InterruptInfo {
	return graph.InterruptInfo{Payload: v}
}
