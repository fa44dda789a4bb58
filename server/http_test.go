package server

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) (int, string, http.Header) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Over HTTP: create a thread, stream a run on it to its end, and find the
// result in the thread's state.
func TestThreadAndStreamedRunOverHTTP(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db")}, nil)
	code, body, _ := post(t, r.url+"/threads", `{"thread_id":"6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a90"}`)
	if code != 200 || !strings.Contains(body, `"thread_id":"6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a90"`) {
		t.Fatalf("create thread: %d %s", code, body)
	}
	code, body, hdr := post(t, r.url+"/threads/6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a90/runs/stream", `{"assistant_id":"echo","input":{"log":["hi"]},"stream_mode":["values"]}`)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s %s", code, hdr.Get("Content-Type"), body)
	}
	for _, want := range []string{"event: metadata", "event: values", `"echo hi"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the stream lacks %q:\n%s", want, body)
		}
	}
	code, body, _ = get(t, r.url+"/threads/6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a90/state")
	if code != 200 || !strings.Contains(body, `"echo hi"`) {
		t.Errorf("state: %d %s", code, body)
	}
}
