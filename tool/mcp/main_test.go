package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The test binary doubles as a stdio MCP server when helperEnv is set, so
// stdio tests run a real child process without building anything.
const (
	helperEnv    = "TRELLIS_MCP_TEST_HELPER" // "serve"; "fail" exits at once; "mute" never answers; "stuck" ignores stdin
	helperLogEnv = "TRELLIS_MCP_TEST_LOG"    // file the helper's tools append to
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "serve":
		os.Exit(runHelper())
	case "fail":
		fmt.Fprintln(os.Stderr, "helper: bad configuration: missing API key")
		os.Exit(2)
	case "mute": // reads requests, never answers
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "stuck": // never reads, never answers, ignores stdin closing
		time.Sleep(time.Hour)
		os.Exit(0)
	case "big": // serves, with a tool whose result is huge
		os.Exit(runHelper())
	}
	goleak.VerifyTestMain(m)
}

// echoSchema exercises what a schema passthrough can break: nesting, $defs,
// numbers, enums, non-ASCII and HTML-special characters.
const echoSchema = `{"type":"object","properties":{"text":{"type":"string","description":"what to echo <b>&</b> ünïcode"},` +
	`"count":{"type":"integer","minimum":1,"maximum":10,"default":2},"mode":{"enum":["a","b",null]},` +
	`"nested":{"type":"object","properties":{"x":{"type":"number","multipleOf":0.5}},"required":["x"]}},` +
	`"required":["text"],"additionalProperties":false,"$defs":{"unused":{"type":"null"}}}`

const objectSchema = `{"type":"object"}`

// testServer builds the in-process server most tests use: page size 2, so
// its tools span several pages. calls counts requests by method.
func testServer(calls *methodCounter) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "test-server", Version: "1"}, &sdk.ServerOptions{PageSize: 2})
	if calls != nil {
		srv.AddReceivingMiddleware(calls.middleware)
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	add := func(t *sdk.Tool, h sdk.ToolHandler) {
		if t.InputSchema == nil {
			t.InputSchema = json.RawMessage(objectSchema)
		}
		srv.AddTool(t, h)
	}
	add(&sdk.Tool{Name: "echo", Description: "Echoes its arguments.", InputSchema: json.RawMessage(echoSchema),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(string(req.Params.Arguments)), nil
		})
	add(&sdk.Tool{Name: "write", Description: "Writes.", Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true)}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("written"), nil })
	add(&sdk.Tool{Name: "plain", Title: "Plain Tool"},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("plain"), nil })
	add(&sdk.Tool{Name: "idempotent", Description: "Idempotent but not read-only.", Annotations: &sdk.ToolAnnotations{IdempotentHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("same"), nil })
	add(&sdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil
		})
	add(&sdk.Tool{Name: "reject", Description: "Says its params are invalid."},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "limit must be positive"}
		})
	add(&sdk.Tool{Name: "broken", Description: "Fails at the protocol level."},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, errors.New("database offline")
		})
	add(&sdk.Tool{Name: "structured", Description: "Structured content only.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{StructuredContent: map[string]any{"temp": 21.5, "unit": "C"}}, nil
		})
	add(&sdk.Tool{Name: "structured_text", Description: "Structured content and text."},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res := text("21.5 C")
			res.StructuredContent = map[string]any{"temp": 21.5}
			return res, nil
		})
	add(&sdk.Tool{Name: "mixed", Description: "Every kind of content."},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "before"},
				&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)},
				&sdk.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
				&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt", Description: "the file"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://note", MIMEType: "text/plain", Text: "note body"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://blob", Blob: []byte{1, 2, 3}}},
				&sdk.TextContent{Text: "after"},
			}}, nil
		})
	add(&sdk.Tool{Name: "slow", Description: "Waits for cancellation.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if calls != nil {
				calls.slowStarted.Store(true)
			}
			select {
			case <-ctx.Done():
				if calls != nil {
					calls.slowCancelled.Store(true)
				}
				return nil, ctx.Err()
			case <-time.After(20 * time.Second):
				return text("woke up"), nil
			}
		})
	return srv
}

// methodCounter counts the requests a server receives.
type methodCounter struct {
	list, call    atomic.Int32
	slowStarted   atomic.Bool
	slowCancelled atomic.Bool
}

func (m *methodCounter) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/list":
			m.list.Add(1)
		case "tools/call":
			m.call.Add(1)
		}
		return next(ctx, method, req)
	}
}

// runHelper serves testServer's tools plus process tools over stdio until
// stdin closes.
func runHelper() int {
	srv := testServer(nil)
	logLine := func(line string) int {
		f, err := os.OpenFile(os.Getenv(helperLogEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			panic(err)
		}
		data, _ := os.ReadFile(os.Getenv(helperLogEnv))
		return strings.Count(string(data), line+"\n")
	}
	raw := json.RawMessage(objectSchema)
	srv.AddTool(&sdk.Tool{Name: "pid", InputSchema: raw, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "record", InputSchema: raw},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			logLine("record")
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "recorded"}}}, nil
		})
	// crash is a write tool whose process dies after it ran, before it
	// answers: the worst case for a retry.
	srv.AddTool(&sdk.Tool{Name: "crash", InputSchema: raw},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			logLine("crash")
			os.Exit(3)
			return nil, nil
		})
	srv.AddTool(&sdk.Tool{Name: "crash_read", InputSchema: raw, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if logLine("crash_read") == 1 {
				os.Exit(3)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "survived"}}}, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	return 0
}
