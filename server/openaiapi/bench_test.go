package openaiapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/convo"
)

// BenchmarkWirePerEvent is the wire's cost per logged event: reading a
// run service event (a messages-tuple chunk, a node update or a custom
// progress event, in a run's proportions) and writing the OpenAI chunk it
// becomes as server-sent data, without the network.
func BenchmarkWirePerEvent(b *testing.B) {
	evs := sampleEvents()
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		s := newSSE(w, "chatcmpl-x", "chat", 0)
		tr := newTranslator(func(d Delta, ev *ProgressEvent) {
			if ev != nil {
				s.chunk(Delta{}, nil, &Extension{Event: ev})
				return
			}
			s.chunk(d, nil, nil)
		})
		for _, ev := range evs {
			tr.add(ev)
		}
		n += len(evs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
}

// sampleEvents is a turn's log: 40 answer chunks, 8 reasoning chunks, a
// node update with the message and 4 progress events.
func sampleEvents() []db.Event {
	var evs []db.Event
	add := func(name string, v any) {
		b, _ := json.Marshal(v)
		evs = append(evs, db.Event{Event: name, Data: b})
	}
	meta := map[string]any{"langgraph_node": "bot", "langgraph_step": 1, "tags": []string{}}
	for range 8 {
		add("messages", []any{map[string]any{"type": "AIMessageChunk", "id": "m1", "content": "", "additional_kwargs": map[string]any{"reasoning_content": "thin"}}, meta})
	}
	for range 40 {
		add("messages", []any{map[string]any{"type": "AIMessageChunk", "id": "m1", "content": "word"}, meta})
	}
	add("updates", map[string]any{"bot": map[string]any{"messages": []any{map[string]any{"type": "ai", "id": "m1", "content": strings.Repeat("word", 40)}}}})
	for _, k := range []string{"step_started", "tool_call", "tool_result", "step_finished"} {
		add("custom|step:1", map[string]any{"kind": k, "step_id": "s1", "title": "Find", "tool": map[string]any{"call_id": "c", "name": "search", "arguments": map[string]any{"q": "x"}, "result": "ok"}})
	}
	return evs
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// BenchmarkFindTurn is the lookup of a conversation's thread by the
// fingerprint of its history among 1,000 threads of the tenant on SQLite:
// "recorded here" hits this process's record of its recent turns (one
// thread read), "search" is the metadata search another process, or a
// restarted one, falls back on.
func BenchmarkFindTurn(b *testing.B) {
	e := newEnv(b, 0)
	ctx := b.Context()
	const n = 1000
	for i := range n {
		fp := fingerprints([]turn{{Role: "user", Text: fmt.Sprint(i)}})[0]
		th := db.Thread{ID: fmt.Sprintf("t-%d", i), Metadata: db.Metadata{mdTurns: []any{fp}, convo.MetadataCheckpoints: map[string]any{fp: "c"}}}
		if _, err := e.db.CreateThread(ctx, DefaultTenant, th, db.IfExistsRaise); err != nil {
			b.Fatal(err)
		}
		e.h.recent.put(DefaultTenant+"/"+fp, th.ID)
	}
	want := fingerprints([]turn{{Role: "user", Text: fmt.Sprint(n / 2)}})[0]
	for _, c := range []struct {
		name string
		h    *Handler
	}{{"recorded here", e.h}, {"search", &Handler{DB: e.db}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				t, ok, err := c.h.findTurn(ctx, DefaultTenant, want)
				if err != nil || !ok || t.ID != fmt.Sprintf("t-%d", n/2) {
					b.Fatalf("found %s %v %v", t.ID, ok, err)
				}
			}
		})
	}
}
