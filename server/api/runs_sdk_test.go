package api

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/internal/testenv"
)

// sdkPackage finds @langchain/langgraph-sdk: TRELLIS_LANGGRAPH_SDK, else
// server/testdata/js (npm ci there); the test skips without it or node
// (fails under TRELLIS_REQUIRE_SERVICES=1).
func sdkPackage(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TRELLIS_LANGGRAPH_SDK")
	if dir == "" {
		dir = filepath.Join("..", "testdata", "js", "node_modules", "@langchain", "langgraph-sdk")
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

// The pinned SDK's own client streams a run (onRunCreated from the
// headers, metadata first, ids, end), replays it with joinStream, waits
// (thread and stateless), sees a failed run's error thrown, interrupts and
// resumes, lists and gets runs.
func TestSDKClientDrivesRuns(t *testing.T) {
	dir := sdkPackage(t)
	e := newRunEnv(t)
	cmd := exec.Command("node", filepath.Join("testdata", "sdkruns.mjs"), dir, e.srv.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got struct {
		Created map[string]string `json:"created"`
		Stream  []struct {
			Event string          `json:"event"`
			ID    *string         `json:"id"`
			Data  json.RawMessage `json:"data"`
		} `json:"stream"`
		Replay        []string         `json:"replay"`
		Wait          json.RawMessage  `json:"wait"`
		StatelessWait json.RawMessage  `json:"statelessWait"`
		WaitError     *string          `json:"waitError"`
		Interrupted   json.RawMessage  `json:"interrupted"`
		Resumed       json.RawMessage  `json:"resumed"`
		List          []map[string]any `json:"list"`
		Get           map[string]any   `json:"get"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if got.Created["thread_id"] != "sdk-t1" || got.Created["run_id"] == "" {
		t.Errorf("onRunCreated got %v", got.Created)
	}
	if len(got.Stream) < 3 || got.Stream[0].Event != "metadata" || got.Stream[len(got.Stream)-1].Event != "end" {
		t.Fatalf("SDK stream: %+v", got.Stream)
	}
	if !strings.Contains(string(got.Stream[len(got.Stream)-2].Data), `"done"`) {
		t.Errorf("last values the SDK saw: %s", got.Stream[len(got.Stream)-2].Data)
	}
	if len(got.Replay) != len(got.Stream) {
		t.Errorf("joinStream replay %v, want %d events", got.Replay, len(got.Stream))
	}
	if !strings.Contains(string(got.Wait), `"again"`) || !strings.Contains(string(got.StatelessWait), `"done"`) {
		t.Errorf("wait %s, stateless wait %s", got.Wait, got.StatelessWait)
	}
	if got.WaitError == nil || !strings.Contains(*got.WaitError, "failed on purpose") {
		t.Errorf("wait of a failing run: error %v, want the failure thrown", got.WaitError)
	}
	if !strings.Contains(string(got.Interrupted), "__interrupt__") || !strings.Contains(string(got.Resumed), "answer yes") {
		t.Errorf("interrupted %s, resumed %s", got.Interrupted, got.Resumed)
	}
	if len(got.List) != 2 || got.Get["run_id"] != got.Created["run_id"] || got.Get["status"] != "success" {
		t.Errorf("list %v, get %v", got.List, got.Get)
	}
}
