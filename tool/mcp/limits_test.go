package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestLongResultsAreCutAndSaySo(t *testing.T) {
	c, _, _ := connectInMemory(t, WithMaxResultBytes(64))
	long := strings.Repeat("é", 100) // 200 bytes
	got, err := call(t, toolsByName(t, c)["echo"], `{"text":"`+long+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	head, marker, ok := strings.Cut(got, "\n[... result cut: ")
	if !ok {
		t.Fatalf("result %q has no cut marker", got)
	}
	if len(head) > 64 || !utf8.ValidString(head) {
		t.Errorf("kept %d bytes (valid UTF-8: %v), want at most 64 whole characters", len(head), utf8.ValidString(head))
	}
	if !strings.Contains(marker, "WithMaxResultBytes") {
		t.Errorf("marker %q does not say how to raise the bound", marker)
	}
	short, err := call(t, toolsByName(t, c)["echo"], `{"text":"hi"}`)
	if err != nil || strings.Contains(short, "cut") {
		t.Errorf("a short result: %q, %v", short, err)
	}
	if _, err := Connect(t.Context(), TransportFunc(nil), WithMaxResultBytes(0)); err == nil || !strings.Contains(err.Error(), "WithMaxResultBytes(0)") {
		t.Errorf("zero bound: err = %v", err)
	}
}

type endlessBody struct{ n atomic.Int64 }

func (b *endlessBody) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	b.n.Add(int64(len(p)))
	return len(p), nil
}
func (b *endlessBody) Close() error { return nil }

// The SDK reads a JSON response body whole; a server that sends an endless
// one is cut off at MaxMessageBytes instead of exhausting memory.
func TestHTTPResponseBodiesAreBounded(t *testing.T) {
	body := &endlessBody{}
	rt := &sessionTransport{base: roundTripper(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
	}), gone: new(atomic.Bool)}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, errTooLong) || !strings.Contains(err.Error(), "mcp.MaxMessageBytes") {
		t.Fatalf("err = %v, want the message-size error", err)
	}
	if n := body.n.Load(); n > MaxMessageBytes+64<<10 {
		t.Errorf("read %d bytes", n)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestListingOfEndlessToolsStops(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "many", Version: "1"}, &sdk.ServerOptions{PageSize: 1000})
	for i := range maxTools + 1 {
		srv.AddTool(&sdk.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: json.RawMessage(objectSchema)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
	}
	m := &inMemory{srv: srv}
	c, err := Connect(t.Context(), m.transport())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Tools(t.Context())
	if err == nil || !strings.Contains(err.Error(), "lists over 10000 tools") {
		t.Errorf("err = %v", err)
	}
}
