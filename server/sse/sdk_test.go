package sse_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/sse"
)

// sdkDir returns the installed SDK package (see testenv.LangGraphSDK).
func sdkDir(t *testing.T) string {
	t.Helper()
	return testenv.LangGraphSDK(t, "dist/utils/sse.js")
}

type sdkEvent struct {
	ID    *string `json:"id"`
	Event string  `json:"event"`
	Data  any     `json:"data"`
}

// TestSDKParserReadsWriterOutput feeds the Writer's bytes through the
// SDK's own SSE decoders, whole and in awkward chunk sizes, and checks the
// client sees each event with its type, id and JSON data, and counts our
// heartbeats as keep-alives. The SDK JSON-parses data after joining data
// lines with LF, reads data that is empty or only whitespace as null, and
// keeps the last id for events without one.
func TestSDKParserReadsWriterOutput(t *testing.T) {
	dir := sdkDir(t)
	pretty := "{\n  \"messages\": [\n    {\"type\": \"human\", \"content\": \"a\\nb\"}\n  ]\n}"
	evs := []sse.Event{
		{Event: "metadata", ID: "0", Data: []byte(`{"run_id":"r1","thread_id":"t1"}`)},
		{Event: "values", ID: "1", Data: []byte(pretty)},
		{Event: "messages", ID: "2", Data: []byte(`[{"type":"AIMessageChunk","content":"你好 👋 \u2028","id":"m1"},{"tags":[]}]`)},
		{Event: "updates|agent:t1", ID: "3", Data: []byte("{\"agent\":\r\n{\"x\":1}}")},
		{Event: "custom", Data: []byte(`"no id: keeps 3"`)},
		{Event: "end", ID: "5"},
	}
	var stream []byte
	stream = append(stream, ": heartbeat\n"...)
	for i, e := range evs {
		stream = sse.AppendEvent(stream, e)
		if i == 2 {
			stream = append(stream, ": heartbeat\n"...)
		}
	}
	want := []sdkEvent{
		{strp("0"), "metadata", map[string]any{"run_id": "r1", "thread_id": "t1"}},
		{strp("1"), "values", map[string]any{"messages": []any{map[string]any{"type": "human", "content": "a\nb"}}}},
		{strp("2"), "messages", []any{map[string]any{"type": "AIMessageChunk", "content": "你好 👋 \u2028", "id": "m1"}, map[string]any{"tags": []any{}}}},
		{strp("3"), "updates|agent:t1", map[string]any{"agent": map[string]any{"x": 1.0}}},
		{strp("3"), "custom", "no id: keeps 3"},
		{strp("5"), "end", nil},
	}
	for _, chunk := range []int{len(stream), 1, 2, 7, 64} {
		in, _ := json.Marshal(map[string]any{"stream": base64.StdEncoding.EncodeToString(stream), "chunk": chunk})
		cmd := exec.Command("node", filepath.Join("testdata", "sdkparse.mjs"), dir)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chunk %d: node: %v\n%s", chunk, err, stderr.String())
		}
		var got struct {
			Events     []sdkEvent `json:"events"`
			Heartbeats int        `json:"heartbeats"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("chunk %d: %v in %s", chunk, err, out)
		}
		if !reflect.DeepEqual(got.Events, want) {
			g, _ := json.MarshalIndent(got.Events, "", " ")
			w, _ := json.MarshalIndent(want, "", " ")
			t.Errorf("chunk %d: the SDK saw\n%s\nwant\n%s", chunk, g, w)
		}
		if got.Heartbeats != 2 {
			t.Errorf("chunk %d: the SDK counted %d heartbeat lines, want 2", chunk, got.Heartbeats)
		}
	}
}

func strp(s string) *string { return &s }
