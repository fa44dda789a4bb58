package a2aapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/db"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/server/internal/runtest"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var chatMsgs = llm.NewMessagesKey("messages")

// Answer is the chat graph's scripted reply.
const Answer = "Noted: the answer streams in small pieces."

// env is the wire over a run service on one SQLite file, served by
// httptest; runs are advanced by goroutines the Enqueuer starts. Graphs:
// "chat" (one model call answering Answer), "planner" (the planner app
// over its scripted model) and "slow" (streams a little, then waits until
// its run is cancelled).
type env struct {
	t      testing.TB
	srv    *httptest.Server
	h      *Handler
	db     *dbsqlite.DB
	hc     *http.Client
	wg     sync.WaitGroup
	authOn bool
	// slowStarted receives once the slow graph has streamed its first
	// text and blocks until its run is cancelled.
	slowStarted chan struct{}
}

func newEnv(t testing.TB) *env {
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
	chat.Otherwise(llmtest.Text(Answer))
	reg := runs.NewRegistry(0)
	must(reg.Register("chat", runs.GraphSpec{Description: "Answers in one short message.", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
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
	must(reg.Register("calendar", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("bot", func(ctx context.Context, st graph.State) (graph.Output, error) {
			creds, err := tool.RequireAuth(ctx, tool.AuthRequest{Tool: "calendar", Message: "Give a calendar token.", Scheme: "bearer"})
			if err != nil {
				return nil, err
			}
			var c struct {
				Token string `json:"token"`
			}
			_ = json.Unmarshal(creds, &c)
			return graph.Writes(graph.Append(chatMsgs, llm.Assistant("Signed in with "+c.Token))), nil
		})
		b.SetEntry("bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}))
	app, err := planner.New(ctx, planner.Config{Model: planner.Script()})
	must(err)
	t.Cleanup(func() { _ = app.Close() })
	must(reg.Register("planner", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) { return app.Graph, nil }}))
	svc, err := runs.New(runs.Config{DB: d, Saver: saver, Graphs: reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond,
		Wire: runs.LCWire{}, Converter: runs.LCConverter(), Log: slog.New(slog.DiscardHandler),
		RunContext: func(ctx context.Context, tenant, thread string) context.Context {
			return apps.WithScope(ctx, runs.ThreadKey(tenant, thread))
		}})
	must(err)
	for _, a := range []db.Assistant{{ID: "chat-a", GraphID: "chat", Name: "Chat"}, {ID: "planner-a", GraphID: "planner", Name: "offsite planner", Description: "Plans team offsites."}, {ID: "slow-a", GraphID: "slow", Name: "slow"}, {ID: "calendar-a", GraphID: "calendar", Name: "calendar"}} {
		_, err := d.CreateAssistant(ctx, DefaultTenant, a, db.IfExistsRaise)
		must(err)
	}
	bg, stop := context.WithCancel(ctx)
	e.h = &Handler{DB: d, Runs: svc, Saver: saver, Graphs: reg, Version: "test", Log: slog.New(slog.DiscardHandler),
		Poll: 50 * time.Millisecond, KeepAlive: time.Second,
		AuthOn:  func(context.Context) bool { return e.authOn },
		Enqueue: runtest.Enqueuer(bg, svc, &e.wg)}
	mux := http.NewServeMux()
	hs := e.h.Handlers()
	mux.Handle("POST /a2a/{assistant}", hs[OperationRPC])
	mux.Handle("GET /a2a/{assistant}/.well-known/agent-card.json", hs[OperationAssistantCard])
	mux.Handle("GET /.well-known/agent-card.json", hs[OperationCard])
	mux.Handle("GET /a2a/{assistant}/rest/{path...}", hs[OperationRESTGet])
	mux.Handle("POST /a2a/{assistant}/rest/{path...}", hs[OperationRESTPost])
	mux.Handle("DELETE /a2a/{assistant}/rest/{path...}", hs[OperationRESTDelete])
	e.srv = httptest.NewServer(mux)
	e.hc = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		e.hc.CloseIdleConnections()
		e.srv.CloseClientConnections()
		e.srv.Close()
		stop()
		e.wg.Wait()
	})
	return e
}

// card resolves an assistant's card from its endpoint's URL, as a client
// given that URL does.
func (e *env) card(assistant string) *a2a.AgentCard {
	e.t.Helper()
	c, err := agentcard.NewResolver(e.hc).Resolve(context.Background(), e.srv.URL+"/a2a/"+assistant)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// client is a2a-go's client for an assistant, from its card: protocol
// 1.0, or 0.3 when v0 is set.
func (e *env) client(assistant string, v0 bool) *a2aclient.Client {
	e.t.Helper()
	card := e.card(assistant)
	opts := []a2aclient.FactoryOption{a2aclient.WithJSONRPCTransport(e.hc)}
	if v0 {
		var iface []*a2a.AgentInterface
		for _, i := range card.SupportedInterfaces {
			if i.ProtocolVersion == a2av0.Version {
				iface = append(iface, i)
			}
		}
		c, err := a2aclient.NewFromEndpoints(context.Background(), iface, a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: e.hc}))
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = c.Destroy() })
		return c
	}
	c, err := a2aclient.NewFromCard(context.Background(), card, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// text is a message's text parts, joined.
func text(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var s string
	for _, p := range m.Parts {
		s += p.Text()
	}
	return s
}

// data is a message's first data part.
func data(m *a2a.Message) map[string]any {
	if m == nil {
		return nil
	}
	for _, p := range m.Parts {
		if d, ok := p.Data().(map[string]any); ok {
			return d
		}
	}
	return nil
}

// send sends a message and returns the task it answers with.
func send(t *testing.T, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage answered %T; want a task", res)
	}
	return task
}

// userText is a user's text message, on a task when task is set.
func userText(s string, task a2a.TaskID) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s))
	m.TaskID = task
	return m
}
