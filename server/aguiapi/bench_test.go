package aguiapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/sse"
)

// BenchmarkWirePerEvent is the wire's cost per logged event: reading a
// run service event (in a turn's proportions: model chunks, task starts
// and ends, node updates and the state after each step) and writing the
// AG-UI events it becomes as server-sent data, without the network.
func BenchmarkWirePerEvent(b *testing.B) {
	evs := sampleEvents()
	w := &discard{h: http.Header{}}
	r := httptest.NewRequest("POST", "/ag-ui/chat", nil)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		sw, err := sse.NewWriter(w, r, sse.Options{Heartbeat: -1})
		if err != nil {
			b.Fatal(err)
		}
		s := sender{sw}
		tr := newTranslator(s.send)
		for _, ev := range evs {
			tr.add(ev)
		}
		tr.finish()
		sw.Close()
		n += len(evs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
}

// sampleEvents is a turn's log on a thread of 20 messages: a task start,
// 8 reasoning chunks, 40 answer chunks, the node's update, the state
// after the step and the task's end.
func sampleEvents() []db.Event {
	var evs []db.Event
	add := func(name string, v any) {
		b, _ := json.Marshal(v)
		evs = append(evs, db.Event{Event: name, Data: b})
	}
	msg := func(i int) map[string]any {
		return map[string]any{"type": "human", "id": "h" + strings.Repeat("x", i), "content": strings.Repeat("word ", 30)}
	}
	var history []any
	for i := range 20 {
		history = append(history, msg(i))
	}
	add("values", map[string]any{"messages": history})
	add("steps", map[string]any{"id": "t1", "name": "bot", "start": true})
	meta := map[string]any{"langgraph_node": "bot", "langgraph_step": 1, "tags": []string{}}
	for range 8 {
		add("messages", []any{map[string]any{"type": "AIMessageChunk", "id": "m1", "content": "", "additional_kwargs": map[string]any{"reasoning_content": "thin"}}, meta})
	}
	for range 40 {
		add("messages", []any{map[string]any{"type": "AIMessageChunk", "id": "m1", "content": "word"}, meta})
	}
	answer := map[string]any{"type": "ai", "id": "m1", "content": strings.Repeat("word", 40)}
	add("updates", map[string]any{"bot": map[string]any{"messages": []any{answer}}})
	add("values", map[string]any{"messages": append(history, answer)})
	add("steps", map[string]any{"id": "t1", "name": "bot"})
	return evs
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}
