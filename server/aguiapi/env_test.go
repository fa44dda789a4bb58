package aguiapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/builder"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/db"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/server/internal/runtest"
	"github.com/trellis-agents/trellis/server/runs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var chatMsgs = llm.NewMessagesKey("messages")

// The chat graph's scripted reply and reasoning; the helper's answer
// after its frontend tool's result.
const (
	Answer      = "Noted: the answer streams in small pieces."
	Thinking    = "The user said something; acknowledge it."
	AfterTool   = "Your app says where you are."
	ClientTool  = "get_location"
	HelperFirst = "Hello."
)

// env is the wire over a run service on one SQLite file, served by
// httptest; runs are advanced by goroutines the Enqueuer starts. Graphs:
// "chat" (one model call: reasoning, then Answer), "planner" (the planner
// app over its scripted model) and "helper" (a ReAct agent that accepts
// client tools and calls get_location when offered).
type env struct {
	t   testing.TB
	srv *httptest.Server
	h   *Handler
	db  *dbsqlite.DB
	wg  sync.WaitGroup
	// helper is the helper graph's model (its requests are read by tests).
	helper *llmtest.Model
	// slowStarted receives once the slow graph has streamed its first
	// text and blocks until its run is cancelled.
	slowStarted chan struct{}
}

func newEnv(t testing.TB, bodyLimit int64) *env {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trellis.db")
	d, err := dbsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	saver, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { saver.Close(); d.Close() })
	e := &env{t: t, db: d, slowStarted: make(chan struct{}, 1)}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	chat := llmtest.New(llmtest.WithChunkSize(4))
	chat.Otherwise(llmtest.Reasoning(Thinking, Answer))
	reg := runs.NewRegistry(0)
	must(reg.Register("chat", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("bot", func(ctx context.Context, st graph.State) (graph.Output, error) {
			resp, err := llm.Call(ctx, chat, &llm.Request{Messages: chatMsgs.Get(st)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(chatMsgs, resp.Message)), nil
		})
		b.SetEntry("bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}))
	must(reg.Register("slow", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("bot", func(ctx context.Context, st graph.State) (graph.Output, error) {
			graph.Messages(ctx).Write(graph.MessageChunk{MessageID: "slow-1", Part: graph.PartText, Text: "Working on it"})
			select {
			case e.slowStarted <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
		b.SetEntry("bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}))
	helper := llmtest.New()
	e.helper = helper
	helper.When(func(r *llmtest.Request) bool {
		return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == llm.RoleTool
	}, llmtest.Text(AfterTool)).Repeat()
	helper.When(func(r *llmtest.Request) bool {
		return slices.ContainsFunc(r.Tools, func(s llm.ToolSpec) bool { return s.Name == ClientTool })
	}, llmtest.ToolCalls(llmtest.Call(ClientTool, `{"precision":"city"}`))).Repeat()
	helper.Otherwise(llmtest.Text(HelperFirst))
	must(reg.Register("helper", runs.GraphSpec{ClientTools: true, New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		return react.New(react.Config{Model: helper})
	}}))
	app, err := planner.New(ctx, planner.Config{Model: planner.Script()})
	must(err)
	t.Cleanup(func() { _ = app.Close() })
	must(reg.Register("planner", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) { return app.Graph, nil }}))
	bapp, err := builder.New(ctx, builder.Config{Model: builder.Script()})
	must(err)
	t.Cleanup(func() { _ = bapp.Close() })
	must(reg.Register("builder", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) { return bapp.Graph, nil }}))
	svc, err := runs.New(runs.Config{DB: d, Saver: saver, Graphs: reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond,
		Wire: runs.LCWire{}, Converter: runs.LCConverter(), Log: slog.New(slog.DiscardHandler),
		RunContext: func(ctx context.Context, tenant, thread string) context.Context {
			return apps.WithScope(ctx, runs.ThreadKey(tenant, thread))
		}})
	must(err)
	for _, a := range []db.Assistant{{ID: "chat-a", GraphID: "chat", Name: "Chat"}, {ID: "helper-a", GraphID: "helper", Name: "helper"}, {ID: "planner-a", GraphID: "planner", Name: "planner"}, {ID: "slow-a", GraphID: "slow", Name: "slow"}, {ID: "builder-a", GraphID: "builder", Name: "builder"}} {
		_, err := d.CreateAssistant(ctx, DefaultTenant, a, db.IfExistsRaise)
		must(err)
	}
	bg, stop := context.WithCancel(ctx)
	e.h = &Handler{DB: d, Runs: svc, Saver: saver, BodyLimit: bodyLimit, Log: slog.New(slog.DiscardHandler),
		Enqueue: runtest.Enqueuer(bg, svc, &e.wg)}
	mux := http.NewServeMux()
	mux.Handle("POST /ag-ui/{assistant}", e.h.Handlers()[OperationID])
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
		stop()
		e.wg.Wait()
	})
	return e
}

// post sends a body (a string as it is, anything else as JSON) to
// /ag-ui/{assistant}.
func (e *env) post(assistant string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	resp, err := http.Post(e.srv.URL+"/ag-ui/"+assistant, "application/json", rd)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// run posts an input and returns its events, failing on anything but a
// 200 event stream.
func (e *env) run(assistant string, in RunAgentInput) []Event {
	e.t.Helper()
	st, b := e.post(assistant, in)
	if st != http.StatusOK {
		e.t.Fatalf("status %d: %s", st, b)
	}
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			e.t.Fatalf("event %s: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

func user(id, text string) Message {
	return Message{ID: id, Role: "user", Content: json.RawMessage(`"` + text + `"`)}
}

// threadValues reads the thread's state.
func (e *env) threadValues(thread string) json.RawMessage {
	e.t.Helper()
	th, err := e.db.GetThread(context.Background(), DefaultTenant, thread)
	if err != nil {
		e.t.Fatal(err)
	}
	return th.Values
}
