package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/trellis-agents/trellis/llm"
)

// A reply whose tool call has an empty name used to be accepted by the
// response decoder and then refused by the request builder on every later
// turn, so the thread was stuck for good. Now the call gets a tool error
// and the next request goes out.
func TestMalformedToolCallsDoNotStickTheThread(t *testing.T) {
	replies := []string{
		`{"id":"r1","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[` +
			`{"id":"","type":"function","function":{"name":"","arguments":"{}"}},` +
			`{"id":"c2","type":"function","function":{"name":"look up","arguments":"{\"q\":"}},` +
			`{"id":"c2","type":"function","function":{"name":"lookup","arguments":"[1,2]"}}]}}]}`,
		`{"id":"r2","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"fixed"}}]}`,
	}
	var n atomic.Int32
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		i := min(int(n.Add(1))-1, len(replies)-1)
		serveJSON(200, []byte(replies[i]), nil)(w, r)
	})
	m := newModel(t, s)
	history := []llm.Message{llm.User("look it up")}
	resp, err := llm.Call(context.Background(), m, &llm.Request{Messages: history})
	if err != nil {
		t.Fatal(err)
	}
	history = append(history, resp.Message)
	for _, c := range resp.Message.ToolCalls {
		history = append(history, llm.ToolError(c, "Error: that call was malformed"))
	}
	resp, err = llm.Call(context.Background(), m, &llm.Request{Messages: history})
	if err != nil {
		t.Fatalf("the turn after a malformed reply failed: %v", err)
	}
	if resp.Message.Text() != "fixed" {
		t.Errorf("reply = %q", resp.Message.Text())
	}
	var sent struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		}
	}
	if err := json.Unmarshal(s.last(t).body, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != 5 {
		t.Fatalf("sent %d messages, want 5", len(sent.Messages))
	}
	calls := sent.Messages[1].ToolCalls
	ids := map[string]bool{}
	for i, c := range calls {
		if !llm.ValidToolName(c.Function.Name) || c.ID == "" || ids[c.ID] || !json.Valid([]byte(c.Function.Arguments)) || !strings.HasPrefix(c.Function.Arguments, "{") {
			t.Errorf("sent call %d = %+v", i, c)
		}
		ids[c.ID] = true
		if got := sent.Messages[2+i].ToolCallID; got != c.ID {
			t.Errorf("result %d answers %q, want %q", i, got, c.ID)
		}
	}
}

// FuzzReplyThenNextRequest decodes random replies, complete and streamed,
// answers their calls as the tool node would, and checks that the next
// request can always be built: the repaired history passes
// llm.CheckHistory and this package's request builder.
func FuzzReplyThenNextRequest(f *testing.F) {
	for _, dir := range []string{"text", "tool_calls", "reasoning"} {
		if b, err := os.ReadFile(filepath.Join("testdata", dir, "response.json")); err == nil {
			f.Add(b)
		}
	}
	for _, dir := range []string{"stream_parallel_tools", "stream_text"} {
		if b, err := os.ReadFile(filepath.Join("testdata", dir, "stream.sse")); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"id":"","function":{"name":"","arguments":"x"}},{"id":"a:b","function":{"name":"é","arguments":"null"}}]}}]}`))
	m, err := New("m", WithBaseURL("http://127.0.0.1:1/v1"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var replies []llm.Message
		var cc openai.ChatCompletion
		if json.Unmarshal(body, &cc) == nil {
			if resp, err := m.response(&cc); err == nil {
				replies = append(replies, resp.Message)
			}
		}
		// The same bytes as a stream: every data line is a chunk.
		var a llm.Assembler
		for _, line := range bytes.Split(body, []byte("\n")) {
			var ev openai.ChatCompletionChunk
			if json.Unmarshal(bytes.TrimPrefix(line, []byte("data: ")), &ev) == nil {
				c, _ := chunkOf(&ev)
				_ = a.Add(c)
			}
		}
		replies = append(replies, a.Response().Message)
		for _, reply := range replies {
			history := []llm.Message{llm.User("go")}
			fixReply(&reply)
			history = append(history, reply)
			for _, c := range reply.ToolCalls {
				history = append(history, llm.ToolError(c, "Error: bad call"))
			}
			history = append(history, llm.User("again"))
			fixed := llm.RepairHistory(history)
			if err := llm.CheckHistory(fixed); err != nil {
				t.Fatalf("repaired history invalid: %v", err)
			}
			if _, err := m.params(&llm.Request{Messages: fixed}); err != nil {
				t.Fatalf("the next request cannot be built: %v", err)
			}
		}
	})
}

// fixReply does what llm.Call does to a reply's call IDs (missing ones get
// one), through llm.Call itself with a model that returns reply.
func fixReply(reply *llm.Message) {
	resp, err := llm.Call(context.Background(), fixed{reply: *reply}, &llm.Request{Messages: []llm.Message{llm.User("go")}})
	if err == nil {
		*reply = resp.Message
	}
}

type fixed struct{ reply llm.Message }

func (f fixed) Name() string { return "test:fixed" }
func (f fixed) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return &llm.Response{Message: f.reply.Clone()}, nil
}
func (f fixed) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(func(llm.Chunk, error) bool) {}
}
