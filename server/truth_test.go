package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps/catalog"
)

// servedApps serves the five apps on their scripted models.
func servedApps(t *testing.T) *running {
	t.Helper()
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), DataDir: t.TempDir(), Logger: quiet(), Scripted: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterApps(catalog.All(), Models{}); err != nil {
		t.Fatal(err)
	}
	return serveInBackground(t, s)
}

// The planner over the OpenAI wire, answered Berlin, 8 people, 3 days, its
// plan and the revision approved and the booking rejected with a reason:
// the plan is the one asked for, and the final answer says nothing was
// booked, and why.
func TestOpenAIPlannerTellsTheTruth(t *testing.T) {
	r := servedApps(t)
	var msgs []map[string]any
	say := func(text string) (string, string) {
		t.Helper()
		msgs = append(msgs, map[string]any{"role": "user", "content": text})
		b, _ := json.Marshal(map[string]any{"model": "planner", "messages": msgs})
		code, out, _ := post(t, r.url+"/v1/chat/completions", string(b))
		var got struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
			Trellis struct {
				Status      string `json:"status"`
				Interaction *struct {
					Kind string `json:"kind"`
				} `json:"interaction"`
			} `json:"trellis"`
		}
		if code != 200 || json.Unmarshal([]byte(out), &got) != nil || len(got.Choices) == 0 {
			t.Fatalf("%q: %d %s", text, code, out)
		}
		content := got.Choices[0].Message.Content
		msgs = append(msgs, map[string]any{"role": "assistant", "content": content})
		kind := got.Trellis.Status
		if got.Trellis.Interaction != nil {
			kind = got.Trellis.Interaction.Kind
		}
		return kind, content
	}
	steps := []struct{ say, wantKind, want string }{
		{"Organise our team offsite", "question", "1. Lisbon"},
		{"Berlin", "question", "Number of people"},
		{"people: 8\nlength: 3 days", "plan_review", "3-day offsite in Berlin for 8 people"},
		{"yes", "plan_review", "The plan changed while it ran"},
		{"yes", "tool_approval", `"venue":"Kiez Studio"`},
		{"reject: the team prefers Lisbon after all", "done", `Nothing was booked: you rejected booking Kiez Studio for 8 people, 3 days from Jun 17, saying: "the team prefers Lisbon after all".`},
	}
	for _, s := range steps {
		kind, content := say(s.say)
		if kind != s.wantKind || !strings.Contains(content, s.want) {
			t.Fatalf("after %q: %s %q; want %s with %q", s.say, kind, content, s.wantKind, s.want)
		}
		if s.wantKind == "done" && (strings.Contains(content, "is booked") || strings.Contains(content, "12 people")) {
			t.Errorf("the final answer claims a booking or the wrong group: %q", content)
		}
	}
}

// The same over AG-UI: the interrupts answered by resume entries, and the
// final answer streamed as text says nothing was booked, and why.
func TestAGUIPlannerTellsTheTruth(t *testing.T) {
	r := servedApps(t)
	thread := "truth-agui"
	first := []map[string]any{{"id": "m1", "role": "user", "content": "Organise our team offsite"}}
	run := func(n int, resume any) (text string, waiting map[string]any) {
		t.Helper()
		in := map[string]any{"threadId": thread, "runId": "r" + string(rune('0'+n)), "messages": first}
		if resume != nil {
			in["resume"] = resume
		}
		b, _ := json.Marshal(in)
		req, _ := http.NewRequest(http.MethodPost, r.url+"/ag-ui/planner", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("run %d: status %d", n, resp.StatusCode)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var out strings.Builder
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type    string          `json:"type"`
				Delta   json.RawMessage `json:"delta"`
				Outcome *struct {
					Type       string           `json:"type"`
					Interrupts []map[string]any `json:"interrupts"`
				} `json:"outcome"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event %s: %v", data, err)
			}
			switch ev.Type {
			case "TEXT_MESSAGE_CONTENT":
				var d string
				_ = json.Unmarshal(ev.Delta, &d)
				out.WriteString(d)
			case "RUN_ERROR":
				t.Fatalf("run %d failed: %s", n, data)
			case "RUN_FINISHED":
				if ev.Outcome != nil && ev.Outcome.Type == "interrupt" && len(ev.Outcome.Interrupts) == 1 {
					waiting = ev.Outcome.Interrupts[0]
				}
			}
		}
		return out.String(), waiting
	}
	answers := []struct {
		reason, want string
		answer       any
	}{
		{"question", "Lisbon", "Berlin"},
		{"question", "people", map[string]any{"values": map[string]any{"people": 8, "length": "3 days"}}},
		{"plan_review", "3-day offsite in Berlin for 8 people", true},
		{"plan_review", "The plan changed while it ran", true},
		{"tool_approval", "Kiez Studio", map[string]any{"action": "reject", "message": "over budget"}},
	}
	text, waiting := run(0, nil)
	for i, a := range answers {
		msg, _ := waiting["message"].(string)
		if waiting == nil || waiting["reason"] != a.reason || !strings.Contains(msg, a.want) {
			t.Fatalf("before answer %d: waiting %v; want a %s with %q", i, waiting, a.reason, a.want)
		}
		payload, _ := json.Marshal(a.answer)
		text, waiting = run(i+1, []map[string]any{{"interruptId": waiting["id"], "status": "resolved", "payload": json.RawMessage(payload)}})
	}
	if waiting != nil {
		t.Fatalf("still waiting: %v", waiting)
	}
	want := `Nothing was booked: you rejected booking Kiez Studio for 8 people, 3 days from Jun 17, saying: "over budget".`
	if !strings.Contains(text, want) || strings.Contains(text, "is booked") {
		t.Errorf("the final answer %q; want %q", text, want)
	}
}
