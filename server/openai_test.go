package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/openaiapi"
	"github.com/trellis-agents/trellis/server/runs"
)

// The served mux has the OpenAI wire: the assistants are models, and a
// graph without chat messages is refused in OpenAI's error shape.
func TestOpenAIWireIsServed(t *testing.T) {
	var blocked atomic.Int32
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "trellis.db")}, &blocked)
	resp, err := http.Get(r.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models openaiapi.ModelList
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if err != nil || len(models.Data) == 0 || models.Data[0].ID != "echo" {
		t.Fatalf("models %+v (%v), want the echo graph", models, err)
	}
	resp, err = http.Post(r.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"echo","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var er openaiapi.ErrorResponse
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &er) != nil || !strings.Contains(er.Error.Message, "messages") {
		t.Errorf("a graph without messages: %d %s, want a 400 naming messages", resp.StatusCode, b)
	}
}

// chatSpec is one streamed model call over the messages.
func chatSpec(m llm.Model) runs.GraphSpec {
	msgs := llm.NewMessagesKey("messages")
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(msgs)
		b.AddNode("bot", func(ctx context.Context, st graph.State) (graph.Output, error) {
			resp, err := llm.Call(ctx, m, &llm.Request{Messages: msgs.Get(st)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(msgs, resp.Message)), nil
		})
		b.SetEntry("bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}
}

// BenchmarkTimeToFirstToken is the time from sending a turn to the first
// answer text, through the served stack (SQLite, River, loopback), for
// one graph whose scripted model streams a 40-word answer in 8-rune
// chunks; each turn on a new thread. "native" is POST
// /threads/{id}/runs/stream with messages-tuple (the first messages event
// with content); "openai" is POST /v1/chat/completions with stream: true
// (the first chunk with delta.content); "agui" is POST /ag-ui/chat (the
// first TEXT_MESSAGE_CONTENT event).
func BenchmarkTimeToFirstToken(b *testing.B) {
	for _, wire := range []string{"native", "openai", "agui"} {
		b.Run(wire, func(b *testing.B) {
			model := llmtest.New(llmtest.WithChunkSize(8))
			model.Otherwise(llmtest.Text(strings.Repeat("word ", 40)))
			s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(b.TempDir(), "trellis.db"), Logger: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Register("chat", chatSpec(model)); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			defer func() { cancel(); <-done }()
			select {
			case <-s.Ready():
			case err := <-done:
				b.Fatal(err)
			}
			url := "http://" + s.Addr()
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				lat = append(lat, firstToken(b, url, wire, i))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ttft-p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ttft-p99-ms")
		})
	}
}

// firstToken sends one turn and returns the time to its first answer
// text, reading the stream to its end.
func firstToken(b *testing.B, url, wire string, i int) time.Duration {
	var req *http.Request
	msgs := []any{map[string]any{"role": "user", "content": fmt.Sprintf("hi %d", i)}}
	switch wire {
	case "native":
		body, _ := json.Marshal(map[string]any{"assistant_id": "chat", "if_not_exists": "create", "stream_mode": []string{"messages-tuple"}, "input": map[string]any{"messages": msgs}})
		req, _ = http.NewRequest("POST", fmt.Sprintf("%s/threads/ttft-%d/runs/stream", url, i), bytes.NewReader(body))
	case "agui":
		body, _ := json.Marshal(map[string]any{"threadId": fmt.Sprintf("ttft-%d", i), "runId": fmt.Sprintf("r-%d", i),
			"messages": []any{map[string]any{"id": "m1", "role": "user", "content": fmt.Sprintf("hi %d", i)}}})
		req, _ = http.NewRequest("POST", url+"/ag-ui/chat", bytes.NewReader(body))
	default:
		body, _ := json.Marshal(map[string]any{"model": "chat", "stream": true, "messages": msgs})
		req, _ = http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(body))
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	first := time.Duration(0)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && first == 0 && hasText(wire, data) {
			first = time.Since(t0)
		}
	}
	if first == 0 {
		b.Fatalf("%s: no answer text in the stream (status %d)", wire, resp.StatusCode)
	}
	return first
}

// hasText reports whether an SSE data line carries answer text.
func hasText(wire, data string) bool {
	if wire == "agui" {
		return strings.Contains(data, `"type":"TEXT_MESSAGE_CONTENT"`)
	}
	if wire == "native" {
		var tuple []struct {
			Content string `json:"content"`
		}
		return json.Unmarshal([]byte(data), &tuple) == nil && len(tuple) > 0 && tuple[0].Content != ""
	}
	var c openaiapi.ChatChunk
	return json.Unmarshal([]byte(data), &c) == nil && len(c.Choices) > 0 && c.Choices[0].Delta.Content != ""
}

// The configurable agent graph takes frontend tools on both chat wires:
// its model is offered the client's tool, the call ends the reply, and
// the client's result lets the run go on.
func TestAgentGraphTakesFrontendTools(t *testing.T) {
	model := llmtest.New()
	model.When(func(r *llmtest.Request) bool {
		return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == llm.RoleTool
	}, llmtest.Text("You are in Lisbon.")).Repeat()
	model.When(func(r *llmtest.Request) bool {
		return slices.ContainsFunc(r.Tools, func(s llm.ToolSpec) bool { return s.Name == "get_location" })
	}, llmtest.ToolCalls(llmtest.Call("get_location", `{}`))).Repeat()
	const id = "front"
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet(),
		Assistants: []db.Assistant{{ID: id, GraphID: AgentGraph, Name: "front", Config: json.RawMessage(`{"configurable":{"model":"test:agent"}}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterAgent(t.Context(), Models{Resolve: func(string) (llm.Model, error) { return model, nil }}, nil); err != nil {
		s.Close()
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	tools := `[{"name":"get_location","description":"where the user is","parameters":{"type":"object"}}]`
	code, body, _ := post(t, r.url+"/ag-ui/"+id, `{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"where?"}],"tools":`+tools+`}`)
	if code != 200 || !strings.Contains(body, `"pendingToolCallIds":["call_1"]`) || !strings.Contains(body, `"toolCallName":"get_location"`) {
		t.Fatalf("AG-UI: %d %s; want the call pending", code, body)
	}
	code, body, _ = post(t, r.url+"/ag-ui/"+id, `{"threadId":"t1","runId":"r2","tools":`+tools+`,"messages":[{"id":"m1","role":"user","content":"where?"},`+
		`{"id":"a1","role":"assistant","toolCalls":[{"id":"call_1","type":"function","function":{"name":"get_location","arguments":"{}"}}]},`+
		`{"id":"t1","role":"tool","toolCallId":"call_1","content":"Lisbon"}]}`)
	if code != 200 || !strings.Contains(body, "TEXT_MESSAGE_START") || !strings.Contains(body, `"type":"success"`) {
		t.Fatalf("AG-UI after the result: %d %s", code, body)
	}
	code, body, _ = post(t, r.url+"/v1/chat/completions", `{"model":"`+id+`","messages":[{"role":"user","content":"where now?"}],`+
		`"tools":[{"type":"function","function":{"name":"get_location","parameters":{"type":"object"}}}]}`)
	if code != 200 || !strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Fatalf("OpenAI: %d %s; want tool_calls", code, body)
	}
}
