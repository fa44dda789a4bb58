package server

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trellis-agents/trellis/internal/testenv"
)

// sdkDir finds @langchain/langgraph-sdk: TRELLIS_LANGGRAPH_SDK, else
// server/testdata/js (npm ci there); the test skips without it or node
// (fails under TRELLIS_REQUIRE_SERVICES=1).
func sdkDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TRELLIS_LANGGRAPH_SDK")
	if dir == "" {
		dir = filepath.Join("testdata", "js", "node_modules", "@langchain", "langgraph-sdk")
	}
	_, statErr := os.Stat(filepath.Join(dir, "dist", "client.js"))
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		msg := "the SDK test needs node and the SDK: run `npm ci` in server/testdata/js or set TRELLIS_LANGGRAPH_SDK"
		if testenv.Required() {
			t.Fatal(testenv.RequireVar + "=1 but " + msg)
		}
		t.Skip(msg)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// The SDK's own client with apiKey (sent as X-Api-Key) works against a
// keyed server, including a graph's default assistant in a new tenant;
// another tenant's client sees 404 for the thread and none of it in
// searches; a client without a key gets 401.
func TestSDKWithAPIKeys(t *testing.T) {
	dir := sdkDir(t)
	file := filepath.Join(t.TempDir(), "t.db")
	keyA, keyB := mkKey(t, file, "a"), mkKey(t, file, "b")
	r := start(t, Config{Database: file}, nil)
	cmd := exec.Command("node", filepath.Join("testdata", "sdkauth.mjs"), dir, r.url, keyA, keyB)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got struct {
		Thread     string          `json:"thread"`
		Wait       json.RawMessage `json:"wait"`
		Parts      []string        `json:"parts"`
		ASearch    []string        `json:"aSearch"`
		BSearch    []string        `json:"bSearch"`
		BGet       any             `json:"bGet"`
		BState     any             `json:"bState"`
		BStream    any             `json:"bStream"`
		AnonSearch any             `json:"anonSearch"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if !bytes.Contains(got.Wait, []byte(`"echo hi"`)) || !slices.Contains(got.Parts, "values") {
		t.Errorf("A's runs: wait %s, stream %v", got.Wait, got.Parts)
	}
	if !slices.Equal(got.ASearch, []string{got.Thread}) || len(got.BSearch) != 0 {
		t.Errorf("searches: A %v, B %v; want A's thread for A only", got.ASearch, got.BSearch)
	}
	for name, v := range map[string]any{"threads.get": got.BGet, "threads.getState": got.BState, "runs.stream": got.BStream} {
		if v != float64(404) {
			t.Errorf("B's %s of A's thread: %v, want 404", name, v)
		}
	}
	if got.AnonSearch != float64(401) {
		t.Errorf("a client without a key: %v, want 401", got.AnonSearch)
	}
}
