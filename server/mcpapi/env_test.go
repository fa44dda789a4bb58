package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/apps"
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

var (
	chatMsgs = llm.NewMessagesKey("messages")
	num      = graph.NewKey[int]("n")
	doubled  = graph.NewKey[int]("doubled")
)

// Answer is the chat graph's scripted reply.
const Answer = "Noted: your message arrived."

// citySchema is the trip graph's question's answer schema: a flat object,
// asked through elicitation as it is.
const citySchema = `{"type":"object","properties":{"city":{"type":"string","enum":["Lisbon","Porto"],"title":"City"},"nights":{"type":"integer","minimum":1}},"required":["city"]}`

// tenantHeader names the test's tenant (the server's requestTenant reads
// the API key instead).
const tenantHeader = "X-Test-Tenant"

// env is the MCP handler over a run service on one SQLite file, served by
// httptest; runs are advanced by goroutines the Enqueuer starts.
type env struct {
	t   testing.TB
	srv *httptest.Server
	h   *Handler
	db  *dbsqlite.DB
	wg  sync.WaitGroup
	// slowStarted receives once the slow graph's node runs; it then
	// blocks until its run is cancelled.
	slowStarted chan struct{}
}

// newEnv serves three graphs, each with an assistant in the default
// tenant: "chat" (one scripted model call), "trip" (asks for a city with
// an interrupt, then answers in the messages) and "double" (not a chat:
// {n} in, {doubled} out, with a custom event per run). Tenant "other"
// has one assistant of its own, "other-chat".
func newEnv(t testing.TB, opts ...func(*Handler)) *env {
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
	model := llmtest.New()
	model.Otherwise(llmtest.Text(Answer))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	reg := runs.NewRegistry(0)
	must(reg.Register("chat", runs.GraphSpec{Description: "Chats.", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("bot", func(ctx context.Context, st graph.State) (graph.Output, error) {
			resp, err := llm.Call(ctx, model, &llm.Request{Messages: chatMsgs.Get(st)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(chatMsgs, resp.Message)), nil
		})
		b.SetEntry("bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}))
	must(reg.Register("trip", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("ask", func(ctx context.Context, st graph.State) (graph.Output, error) {
			ans, err := graph.Interrupt[struct {
				City   string `json:"city"`
				Nights int    `json:"nights"`
			}](ctx, map[string]string{"question": "Which city?"}, graph.ExpectAnswer(json.RawMessage(citySchema)))
			if err != nil {
				return nil, err
			}
			msg := llm.Assistant(fmt.Sprintf("Booked %s for %d nights.", ans.City, max(ans.Nights, 1)))
			return graph.Writes(graph.Append(chatMsgs, msg)), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}))
	must(reg.Register("pick", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("ask", func(ctx context.Context, st graph.State) (graph.Output, error) {
			picked, err := graph.Interrupt[[]string](ctx, "Pick some tags", graph.ExpectAnswer(json.RawMessage(`{"type":"array","items":{"type":"string"},"minItems":1}`)))
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(chatMsgs, llm.Assistant("Picked "+strings.Join(picked, ", ")))), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}))
	must(reg.Register("slow", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("wait", func(ctx context.Context, st graph.State) (graph.Output, error) {
			select {
			case e.slowStarted <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
		b.SetEntry("wait")
		b.AddEdge("wait", graph.END)
		return b.Compile()
	}}))
	must(reg.Register("double", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(num, doubled)
		b.AddNode("twice", func(ctx context.Context, st graph.State) (graph.Output, error) {
			graph.Emit(ctx, map[string]int{"doubling": num.Get(st)})
			return graph.Writes(doubled.Set(2 * num.Get(st))), nil
		})
		b.SetEntry("twice")
		b.AddEdge("twice", graph.END)
		return b.Compile()
	}}))
	svc, err := runs.New(runs.Config{DB: d, Saver: saver, Graphs: reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond,
		Wire: runs.LCWire{}, Converter: runs.LCConverter(), Log: slog.New(slog.DiscardHandler),
		RunContext: func(ctx context.Context, tenant, thread string) context.Context {
			return apps.WithScope(ctx, runs.ThreadKey(tenant, thread))
		}})
	must(err)
	for _, a := range []db.Assistant{
		{ID: "chat-a", GraphID: "chat", Name: "chat"},
		{ID: "chat-b", GraphID: "chat", Name: "chat", Description: "The second chat."},
		{ID: "trip-a", GraphID: "trip", Name: "Trip planner!"},
		{ID: "double-a", GraphID: "double", Name: "double"},
		{ID: "pick-a", GraphID: "pick", Name: "pick"},
		{ID: "slow-a", GraphID: "slow", Name: "slow"},
	} {
		_, err := d.CreateAssistant(ctx, DefaultTenant, a, db.IfExistsRaise)
		must(err)
		time.Sleep(2 * time.Millisecond) // distinct created_at: the listing's order
	}
	_, err = d.CreateAssistant(ctx, "other", db.Assistant{ID: "other-chat", GraphID: "chat", Name: "other chat"}, db.IfExistsRaise)
	must(err)
	bg, stop := context.WithCancel(ctx)
	e.h = &Handler{DB: d, Runs: svc, Graphs: reg, Log: slog.New(slog.DiscardHandler),
		Tenant:  func(r *http.Request) string { return cmpOr(r.Header.Get(tenantHeader), DefaultTenant) },
		Enqueue: runtest.Enqueuer(bg, svc, &e.wg)}
	for _, o := range opts {
		o(e.h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", e.h.HTTPHandler())
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
		stop()
		e.wg.Wait()
	})
	return e
}

// headerTransport adds a header to every request.
type headerTransport struct {
	name, value string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session as tenant with the client options given.
func (e *env) connect(tenant string, opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	hc := &http.Client{Transport: headerTransport{tenantHeader, tenant}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// call calls a tool and fails the test on a protocol error.
func invoke(t testing.TB, s *mcp.ClientSession, name string, args any, progress bool) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if progress {
		p.SetProgressToken("tok-" + name)
	}
	res, err := s.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("call %s %v: %v", name, args, err)
	}
	return res
}

// structured decodes a result's structured content.
func structured(t testing.TB, res *mcp.CallToolResult) Result {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil || r.ThreadID == "" {
		t.Fatalf("structured content %s: %v (want a thread_id)", b, err)
	}
	return r
}

// text joins a result's text content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
