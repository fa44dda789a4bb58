package a2aapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/db"
)

// A message sent again with the same messageId — a client that lost the
// answer and retries — gets the task it started the first time, and no
// second run: a new task's message (without a context, whose context is
// derived from the message's ID), an answer to the task's question, and a
// stream of the first message again, which gives the task as it stands
// and ends.
func TestRepeatedMessageIsNotRunTwice(t *testing.T) {
	e := newEnv(t)
	c := e.client("planner-a", false)
	first := userText("Organise our team offsite", "")
	task := send(t, c, first)
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("first send: %v", task.Status.State)
	}
	runsOf := func() int {
		t.Helper()
		rs, err := e.db.ListRuns(context.Background(), DefaultTenant, task.ContextID, db.RunQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}
	again := *first
	if got := send(t, c, &again); got.ID != task.ID || got.Status.State != a2a.TaskStateInputRequired || runsOf() != 1 {
		t.Fatalf("the message sent again: task %s (%v), %d runs; want task %s and 1 run", got.ID, got.Status.State, runsOf(), task.ID)
	}
	answer := userText("lisbon", task.ID)
	got := send(t, c, answer)
	if got.Status.State != a2a.TaskStateInputRequired || !strings.Contains(text(got.Status.Message), "Number of people (people)") || runsOf() != 2 {
		t.Fatalf("after the city: %v %q, %d runs", got.Status.State, text(got.Status.Message), runsOf())
	}
	answerAgain := *answer
	got = send(t, c, &answerAgain)
	if got.ID != task.ID || strings.Contains(text(got.Status.Message), "did not fit") || !strings.Contains(text(got.Status.Message), "Number of people (people)") || runsOf() != 2 {
		t.Fatalf("the answer sent again: %v %q, %d runs; want the form asked, as after the first, and 2 runs", got.Status.State, text(got.Status.Message), runsOf())
	}
	var evs []a2a.Event
	for ev, err := range c.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{Message: &again}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != 1 || runsOf() != 2 {
		t.Fatalf("the first message streamed again: %d events, %d runs; want the task alone and 2 runs", len(evs), runsOf())
	}
	if st, ok := evs[0].(*a2a.Task); !ok || st.ID != task.ID || !strings.Contains(text(st.Status.Message), "Number of people") {
		t.Errorf("the stream's task %#v; want task %s as it stands", evs[0], task.ID)
	}
	// Another message (another ID) is another task, in another context.
	other := send(t, c, userText("Organise our team offsite", ""))
	if other.ID == task.ID || other.ContextID == task.ContextID || !strings.Contains(text(other.Status.Message), planner.CityQuestion) {
		t.Errorf("a new message: task %s context %s; want a new task and context", other.ID, other.ContextID)
	}
}

// resendProxy forwards requests to target; the first streaming send
// reaches target in full, but its caller gets no answer (the connection
// drops), as when a caller crashes or loses the connection before the
// remote's first event.
func resendProxy(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var dropped atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		stream := bytes.Contains(body, []byte(`"SendStreamingMessage"`)) || bytes.Contains(body, []byte(`"message/stream"`))
		if !stream || dropped.Swap(true) {
			rp.ServeHTTP(w, r)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // the remote took the message and answered
			resp.Body.Close()
		}
		panic(http.ErrAbortHandler) // the caller hears nothing
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A caller that lost the connection before the remote's first event
// sends the message again when its node runs again: the same message
// (the ID is a durable step), which the remote recognises, so the remote
// ran one task, once, and the caller gets its answer.
func TestCallerResendsTheSameMessage(t *testing.T) {
	e := newEnv(t)
	proxy := resendProxy(t, e.srv.URL)
	a, err := newA2ATool(proxy + "/a2a/chat-a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	g := remoteGraph(t, a, "hello")
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("local-1")}
	if _, err := g.Invoke(context.Background(), graph.Writes(remoteReply.Set("")), opts...); err == nil {
		t.Fatal("the first run went on without the remote's answer")
	}
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got := remoteReply.Get(res.State); got != Answer {
		t.Errorf("the reply %q; want %q", got, Answer)
	}
	ths, err := e.db.SearchThreads(context.Background(), DefaultTenant, db.ThreadQuery{Query: db.Query{Limit: 10}})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, th := range ths {
		rs, err := e.db.ListRuns(context.Background(), DefaultTenant, th.ID, db.RunQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		total += len(rs)
	}
	if len(ths) != 1 || total != 1 {
		t.Errorf("the remote has %d contexts and %d runs; want the one task, run once", len(ths), total)
	}
}
