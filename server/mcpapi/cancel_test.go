package mcpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/server/db"
)

// runOf waits (up to a generous bound, for a loaded machine) until the
// thread's only run satisfies ok, and returns it.
func (e *env) runOf(thread string, ok func(db.Run) bool) db.Run {
	e.t.Helper()
	ctx := context.Background()
	var last db.Run
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rs, err := e.db.ListRuns(ctx, DefaultTenant, thread, db.RunQuery{Limit: 2})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(rs) == 1 {
			last = rs[0]
			if ok(last) {
				return last
			}
		}
	}
	e.t.Fatalf("thread %s: run %+v never reached the wanted state", thread, last)
	return last
}

// A call the client cancels (notifications/cancelled, sent by the SDK
// when the call's context ends) cancels its run: the run ends
// interrupted and the thread waits for nothing, so a new call may follow.
func TestCancelledCallCancelsRun(t *testing.T) {
	e := newEnv(t)
	s := e.connect(DefaultTenant, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"message": "take your time", "thread_id": "t-slow"}})
		errc <- err
	}()
	<-e.slowStarted
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	run := e.runOf("t-slow", func(r db.Run) bool { return r.Status.Terminal() })
	if run.Status != db.RunInterrupted {
		t.Fatalf("run status %s; want interrupted (cancelled)", run.Status)
	}
	th, err := e.db.GetThread(context.Background(), DefaultTenant, "t-slow")
	if err != nil || th.Status == db.ThreadInterrupted || th.Status == db.ThreadBusy {
		t.Fatalf("thread %+v %v: want it free for the next call", th.Status, err)
	}
}

// Stateless mode: no session ID, no elicitation even for a client that
// offers it (the waiting result instead), and the {thread_id, answer}
// resume from a client that never saw the first call (another replica's
// client, as behind a balancer without sticky sessions); GET is 405.
func TestStateless(t *testing.T) {
	e := newEnv(t, func(h *Handler) { h.Stateless = true })
	asked := false
	s := e.connect(DefaultTenant, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = true
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	if id := s.ID(); id != "" {
		t.Errorf("session ID %q in stateless mode", id)
	}
	r := structured(t, invoke(t, s, "Trip_planner", map[string]any{"message": "plan a trip"}, false))
	if asked || r.Status != StatusWaiting || r.Question == nil || r.Question.Elicitation != "unsupported" {
		t.Fatalf("result %+v (elicited: %v): want waiting, not elicited", r, asked)
	}
	other := e.connect(DefaultTenant, nil)
	done := structured(t, invoke(t, other, "Trip_planner", map[string]any{"thread_id": r.ThreadID, "answer": map[string]any{"city": "Porto", "nights": 2}}, false))
	if done.Status != StatusDone || done.Answer != "Booked Porto for 2 nights." {
		t.Fatalf("after the answer: %+v", done)
	}
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp: %d; want 405 (no standalone stream without sessions)", resp.StatusCode)
	}
	if !strings.Contains(text(invoke(t, other, "chat", map[string]any{"message": "hi"}, false)), Answer) {
		t.Error("a plain call in stateless mode lost its answer")
	}
}
