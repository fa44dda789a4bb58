package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rawEvent is one event as framed on the wire: its id: line (absent is
// hasID false, which the client reads as "keep the previous id") and its
// event: and data: lines.
type rawEvent struct {
	id    string
	hasID bool
	event string
	data  string
}

// rawEvents reads a whole SSE body and splits it into framed events,
// without the client rule that an event with no id: line inherits the
// previous one, so a test sees what the server actually sent.
func rawEvents(t *testing.T, resp *http.Response) []rawEvent {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out []rawEvent
	for block := range strings.SplitSeq(string(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))), "\n\n") {
		var ev rawEvent
		var data []string
		seen := false
		for line := range strings.SplitSeq(block, "\n") {
			name, val, _ := strings.Cut(line, ":")
			val = strings.TrimPrefix(val, " ")
			switch name {
			case "id":
				ev.id, ev.hasID, seen = val, true, true
			case "event":
				ev.event, seen = val, true
			case "data":
				data, seen = append(data, val), true
			}
		}
		if seen {
			ev.data = strings.Join(data, "\n")
			out = append(out, ev)
		}
	}
	return out
}

// Every event of a run stream carries its own id — the end too — and the
// end's data is JSON (null), so the SDK's parser (1.8.x runs JSON.parse
// on it) neither throws nor repeats the previous id. A client rejoining
// with the last data event's id gets the end (with the same id) and
// nothing else; rejoining with the end's id gets the end again, not a
// second copy of the run.
func TestRunStreamEndHasIDAndJSONData(t *testing.T) {
	e := newRunEnv(t)
	resp := e.open(context.Background(), "POST", "/threads/t1/runs/stream", map[string]any{
		"assistant_id": "steps-a", "input": input("go"), "if_not_exists": "create",
	})
	cloc := resp.Header.Get("Content-Location")
	evs := rawEvents(t, resp)
	if len(evs) < 3 {
		t.Fatalf("events %v: want metadata, the run's events and end", evs)
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		if !ev.hasID || ev.id == "" {
			t.Errorf("event %q has no id: line of its own (%v)", ev.event, evs)
		}
		if seen[ev.id] {
			t.Errorf("id %q sent twice (%v)", ev.id, evs)
		}
		seen[ev.id] = true
	}
	end := evs[len(evs)-1]
	if end.event != "end" || end.data != "null" {
		t.Fatalf("last event %+v: want end with data null", end)
	}
	lastData := evs[len(evs)-2]
	rest := rawEvents(t, e.open(context.Background(), "GET", cloc+"/stream", nil, "Last-Event-ID", lastData.id))
	if len(rest) != 1 || rest[0].event != "end" || rest[0].id != end.id || rest[0].data != "null" {
		t.Errorf("rejoin after the last data event %s: got %+v, want only the end %+v", lastData.id, rest, end)
	}
	again := rawEvents(t, e.open(context.Background(), "GET", cloc+"/stream", nil, "Last-Event-ID", end.id))
	if len(again) != 1 || again[0].event != "end" || again[0].id != end.id {
		t.Errorf("rejoin after the end %s: got %+v, want the same end again", end.id, again)
	}
	// Narrowed to updates (values filtered out), the end keeps an id past
	// every event of the run, so a rejoin with it replays nothing.
	upd := rawEvents(t, e.open(context.Background(), "GET", cloc+"/stream?stream_mode=updates", nil, "Last-Event-ID", "-1"))
	if u := upd[len(upd)-1]; u.event != "end" || u.id != end.id {
		t.Errorf("filtered replay ends with %+v, want the end %+v", u, end)
	}
}
