package a2aapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
)

// recorder keeps the requests a client sends, in the route table's
// fixture form (server/api/spec/testdata/sdk).
type recorder struct {
	next http.RoundTripper
	reqs []map[string]any
}

func (rc *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var body json.RawMessage
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		if len(b) > 0 {
			body = b
		}
	}
	var ct any
	if v := r.Header.Get("Content-Type"); v != "" {
		ct = v
	}
	rc.reqs = append(rc.reqs, map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "content_type": ct, "body": body})
	return rc.next.RoundTrip(r)
}

// TestCaptureSDKRequests writes the requests a2a-go's client sends (the
// cards, a send and a stream in 1.0, a send in 0.3, a task read) as the
// route table's fixtures, when TRELLIS_A2A_CAPTURE names the directory:
// go test ./server/a2aapi -run TestCaptureSDKRequests with
// TRELLIS_A2A_CAPTURE=$PWD/server/api/spec/testdata/sdk.
func TestCaptureSDKRequests(t *testing.T) {
	dir := os.Getenv("TRELLIS_A2A_CAPTURE")
	if dir == "" {
		t.Skip("TRELLIS_A2A_CAPTURE is not set")
	}
	e := newEnv(t)
	rec := &recorder{next: e.hc.Transport}
	e.hc.Transport = rec
	ctx := context.Background()
	save := func(name string) {
		t.Helper()
		last := rec.reqs[len(rec.reqs)-1]
		b, err := json.MarshalIndent(last, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := agentcard.NewResolver(e.hc).Resolve(ctx, e.srv.URL+"/a2a/planner-a"); err != nil {
		t.Fatal(err)
	}
	save("a2a_card")
	if _, err := agentcard.NewResolver(e.hc).Resolve(ctx, e.srv.URL, agentcard.WithPath("/.well-known/agent-card.json")); err != nil {
		t.Fatal(err)
	}
	save("a2a_card_well_known")
	c := e.client("chat-a", false)
	task := send(t, c, userText("hello", ""))
	save("a2a_send")
	for _, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: userText("again", "")}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	save("a2a_stream")
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	save("a2a_get_task")
	send(t, e.client("chat-a", true), userText("hello", ""))
	save("a2a_send_v03")
	// The REST binding.
	var iface []*a2a.AgentInterface
	for _, i := range e.card("chat-a").SupportedInterfaces {
		if i.ProtocolBinding == a2a.TransportProtocolHTTPJSON {
			iface = append(iface, i)
		}
	}
	rc, err := a2aclient.NewFromEndpoints(ctx, iface, a2aclient.WithRESTTransport(e.hc))
	if err != nil {
		t.Fatal(err)
	}
	task = send(t, rc, userText("hello", ""))
	save("a2a_rest_send")
	if _, err := rc.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	save("a2a_rest_get_task")
	_ = rc.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "none"})
	save("a2a_rest_delete_push")
}
