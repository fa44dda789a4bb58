package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an API key to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession opens an MCP session on /mcp with key ("" for none).
func mcpSession(t *testing.T, url, key string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{}
	if key != "" {
		hc.Transport = bearer(key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

// /mcp sits behind the API keys: without one nothing connects; with B's
// key the tools are B's assistants, never A's, A's assistant cannot be
// called, and the run B makes lands in B's tenant.
func TestMCPUsesTheKeysTenant(t *testing.T) {
	database := filepath.Join(t.TempDir(), "t.db")
	keyA, keyB := mkKey(t, database, "tenant-a"), mkKey(t, database, "tenant-b")
	r := start(t, Config{Database: database, DataDir: t.TempDir()}, nil)
	A := client{t: t, base: r.url, key: keyA}
	code, body, _ := A.do("POST", "/assistants", "", `{"graph_id":"echo","name":"secret of A"}`)
	field(t, code, body, "assistant_id")

	if _, err := mcpSession(t, r.url, ""); err == nil {
		t.Error("an MCP session opened without an API key")
	}
	sa, err := mcpSession(t, r.url, keyA)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := mcpSession(t, r.url, keyB)
	if err != nil {
		t.Fatal(err)
	}
	names := func(s *mcp.ClientSession) []string {
		res, err := s.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := strings.Join(names(sa), ","); !strings.Contains(got, "secret_of_A") {
		t.Fatalf("A's tools %s: want A's assistant", got)
	}
	if got := strings.Join(names(sb), ","); strings.Contains(got, "secret") || got == "" {
		t.Fatalf("B's tools %s: want B's default assistants only", got)
	}
	if _, err := sb.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret_of_A", Arguments: map[string]any{"log": []string{"x"}}}); err == nil {
		t.Error("B called A's assistant")
	}
	res, err := sb.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"log": []string{"from B"}}})
	if err != nil || res.IsError {
		t.Fatalf("B's echo: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct {
		ThreadID string `json:"thread_id"`
		Values   struct {
			Log []string `json:"log"`
		} `json:"values"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || fmt.Sprint(out.Values.Log) != "[from B echo from B]" {
		t.Fatalf("B's result %s", raw)
	}
	B := client{t: t, base: r.url, key: keyB}
	if code, body, _ := B.do("GET", "/threads/"+out.ThreadID, "", ""); code != 200 {
		t.Errorf("B's thread through the API: %d %s", code, body)
	}
	if code, _, _ := A.do("GET", "/threads/"+out.ThreadID, "", ""); code != 404 {
		t.Errorf("A reads B's MCP thread: %d", code)
	}
}
