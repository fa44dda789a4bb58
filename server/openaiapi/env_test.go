package openaiapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/agent/react"
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

// env is the wire over a run service on one SQLite file, served by
// httptest; runs are advanced by goroutines the Enqueuer starts.
type env struct {
	t     testing.TB
	srv   *httptest.Server
	h     *Handler
	db    *dbsqlite.DB
	model *llmtest.Model
	wg    sync.WaitGroup
}

// Answer is the chat graph's scripted reply; Thinking its reasoning.
const (
	Answer   = "Noted: the answer streams in small pieces."
	Thinking = "The user said something; acknowledge it."
	// AfterTool is the helper's answer once its client tool answered.
	AfterTool = "Your app says where you are."
	MixedDone = "Located you and sent the note."
)

// newEnv serves two graphs: "chat" (one model call over the messages,
// scripted to reason then answer) and "planner" (the planner app over its
// scripted model), each with a default assistant, and "chat-b", a second
// assistant of chat.
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
	e := &env{t: t, db: d, model: llmtest.New(llmtest.WithChunkSize(4))}
	e.model.When(llmtest.LastUserContains("take your time"), llmtest.Text("late").After(time.Hour)).Repeat()
	e.model.When(llmtest.LastUserContains("break"), llmtest.Text("half an answer").FailAfter(2, errors.New("the model is down"))).Repeat()
	e.model.Otherwise(llmtest.Reasoning(Thinking, Answer))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	reg := runs.NewRegistry(0)
	must(reg.Register("chat", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("bot", func(ctx context.Context, st graph.State) (graph.Output, error) {
			resp, err := llm.Call(ctx, e.model, &llm.Request{Messages: chatMsgs.Get(st)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(chatMsgs, resp.Message)), nil
		})
		b.SetEntry("bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}))
	helper := llmtest.New(llmtest.WithChunkSize(4))
	helper.When(func(r *llmtest.Request) bool {
		return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == llm.RoleTool
	}, llmtest.Text(AfterTool)).Repeat()
	helper.When(func(r *llmtest.Request) bool { return len(r.Tools) > 0 },
		llmtest.ToolCalls(llmtest.Call("get_location", `{"precision":"city"}`))).Repeat()
	helper.Otherwise(llmtest.Text(Answer))
	must(reg.Register("helper", runs.GraphSpec{ClientTools: true, New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		return react.New(react.Config{Model: helper})
	}}))
	// mixed: one reply calls the client's get_location and send_note, a
	// write tool that asks a person's approval, so the thread waits on
	// both; with both results the model answers MixedDone.
	mixed := llmtest.New()
	mixed.When(func(r *llmtest.Request) bool {
		return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == llm.RoleTool
	}, llmtest.Text(MixedDone)).Repeat()
	mixed.Otherwise(llmtest.ToolCalls(llmtest.Call("get_location", `{"precision":"city"}`), llmtest.Call("send_note", `{"text":"on my way"}`)))
	note := tool.MustFunc("send_note", "sends a note", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return "sent: " + a.Text, nil
	})
	must(reg.Register("mixed", runs.GraphSpec{ClientTools: true, New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		return react.New(react.Config{Model: mixed, Tools: []tool.Tool{note}})
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
	for _, a := range []db.Assistant{{ID: "chat-a", GraphID: "chat", Name: "chat"}, {ID: "chat-b", GraphID: "chat", Name: "chat B"}, {ID: "planner-a", GraphID: "planner", Name: "planner"}, {ID: "helper-a", GraphID: "helper", Name: "helper"}, {ID: "mixed-a", GraphID: "mixed", Name: "mixed"}} {
		_, err := d.CreateAssistant(ctx, DefaultTenant, a, db.IfExistsRaise)
		must(err)
	}
	bg, stop := context.WithCancel(ctx)
	e.h = &Handler{DB: d, Runs: svc, Saver: saver, BodyLimit: bodyLimit, Log: slog.New(slog.DiscardHandler),
		Enqueue: runtest.Enqueuer(bg, svc, &e.wg)}
	// The route table (server/api/spec) imports this package; the
	// server's tests serve the wire from it.
	mux := http.NewServeMux()
	handlers := e.h.Handlers()
	mux.Handle("GET /v1/models", handlers["listModels"])
	mux.Handle("POST /v1/chat/completions", handlers["createChatCompletion"])
	mux.Handle("GET /v1/threads/{thread_id}/messages", handlers["listThreadMessages"])
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
		stop()
		e.wg.Wait()
	})
	return e
}

// post sends a body (a string as it is, anything else as JSON) to the
// chat route with headers as name, value pairs.
func (e *env) post(body any, hdr ...string) (int, http.Header, []byte) {
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
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range resp.Trailer {
		resp.Header[k] = v
	}
	return resp.StatusCode, resp.Header, b
}

// complete sends a non-streamed request and decodes the completion.
func (e *env) complete(body map[string]any, hdr ...string) (ChatCompletion, http.Header) {
	e.t.Helper()
	st, h, b := e.post(body, hdr...)
	if st != http.StatusOK {
		e.t.Fatalf("status %d: %s", st, b)
	}
	var c ChatCompletion
	if err := json.Unmarshal(b, &c); err != nil {
		e.t.Fatalf("%v: %s", err, b)
	}
	if len(c.Choices) != 1 || c.Trellis == nil {
		e.t.Fatalf("completion %s: want one choice and the extension", b)
	}
	return c, h
}

// chunks parses a streamed answer: each data line's JSON, and whether
// [DONE] ended it.
func chunks(t *testing.T, b []byte) ([]json.RawMessage, bool) {
	t.Helper()
	var out []json.RawMessage
	done := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		if done {
			t.Errorf("data after [DONE]: %s", line)
		}
		out = append(out, json.RawMessage(line))
	}
	return out, done
}

// conversation is a client that keeps its history, as a chat app does.
type conversation struct {
	e     *env
	model string
	msgs  []map[string]any
	hdr   []string
}

// say sends text as the next user message and keeps the reply.
func (c *conversation) say(text string) ChatCompletion {
	c.e.t.Helper()
	c.msgs = append(c.msgs, map[string]any{"role": "user", "content": text})
	got, _ := c.e.complete(map[string]any{"model": c.model, "messages": c.msgs}, c.hdr...)
	c.msgs = append(c.msgs, map[string]any{"role": "assistant", "content": got.Choices[0].Message.Content})
	return got
}

// userMessages counts the human messages in the thread's values.
func (e *env) userMessages(thread string) []string {
	e.t.Helper()
	th, err := e.db.GetThread(context.Background(), DefaultTenant, thread)
	if err != nil {
		e.t.Fatal(err)
	}
	var v struct {
		Messages []struct {
			Type    string `json:"type"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(th.Values, &v); err != nil {
		e.t.Fatalf("thread values %s: %v", th.Values, err)
	}
	var out []string
	for _, m := range v.Messages {
		if m.Type == "human" {
			s, _ := m.Content.(string)
			out = append(out, s)
		}
	}
	return out
}
