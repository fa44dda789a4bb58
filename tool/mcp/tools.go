package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/tool"
)

// maxPages stops a server whose cursors never end, and maxTools one that
// lists more tools than any model could be offered.
const (
	maxPages = 1000
	maxTools = 10000
)

// Tools lists the server's tools, following cursors through every page,
// within WithListTimeout. Each tool.Info carries the server's description
// (its title when there is none) and its input schema, passed through
// unchanged in meaning (key order and number spelling may differ: the SDK
// decodes it); ReadOnly is true only when the tool is annotated
// readOnlyHint: true. Names get the WithToolPrefix prefix; WithToolFilter
// drops tools. The list is a snapshot: call Tools again after the server's
// tools change. A listing cut by a lost connection is retried once on a new
// connection.
func (c *Client) Tools(ctx context.Context) ([]tool.Tool, error) {
	for attempt := 0; ; attempt++ {
		cn, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		remote, err := c.listAll(ctx, cn)
		if err == nil {
			return c.wrap(remote)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("MCP server %q: listing tools: %w", c.name, ctx.Err())
		}
		if c.isClosed() {
			return nil, c.errClosed()
		}
		if k := classify(cn, err); k != failOther && attempt == 0 {
			c.retire(cn)
			continue
		}
		return nil, fmt.Errorf("MCP server %q: listing tools: %w", c.name, err)
	}
}

func (c *Client) listAll(ctx context.Context, cn *conn) ([]*sdk.Tool, error) {
	lctx, cancel := context.WithTimeout(ctx, c.cfg.listTimeout)
	defer cancel()
	stop := context.AfterFunc(c.closeCtx, cancel)
	defer stop()
	var all []*sdk.Tool
	seen := map[string]bool{}
	cursor := ""
	for page := 1; ; page++ {
		res, err := cn.session.ListTools(lctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			if lctx.Err() == context.DeadlineExceeded && ctx.Err() == nil && c.closeCtx.Err() == nil {
				return nil, fmt.Errorf("no complete answer within %v (page %d; raise WithListTimeout for a slow server): %w", c.cfg.listTimeout, page, err)
			}
			return nil, err
		}
		all = append(all, res.Tools...)
		if len(all) > maxTools {
			return nil, fmt.Errorf("the server lists over %d tools (page %d); no model can be offered that many, so the listing was stopped", maxTools, page)
		}
		if res.NextCursor == "" {
			return all, nil
		}
		if seen[res.NextCursor] || page >= maxPages {
			return nil, fmt.Errorf("the server's cursors do not end (page %d returned cursor %q again or there are over %d pages)", page, res.NextCursor, maxPages)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

func (c *Client) wrap(remote []*sdk.Tool) ([]tool.Tool, error) {
	out := make([]tool.Tool, 0, len(remote))
	names := map[string]bool{}
	for _, t := range remote {
		if t.Name == "" {
			return nil, fmt.Errorf("MCP server %q listed a tool without a name", c.name)
		}
		if c.cfg.filter != nil && !c.cfg.filter(t.Name) {
			continue
		}
		if names[t.Name] {
			return nil, fmt.Errorf("MCP server %q listed tool %q twice", c.name, t.Name)
		}
		names[t.Name] = true
		var params json.RawMessage
		if t.InputSchema != nil {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(t.InputSchema); err != nil {
				return nil, fmt.Errorf("MCP server %q: tool %q: encoding its input schema: %w", c.name, t.Name, err)
			}
			params = bytes.TrimSpace(buf.Bytes())
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		if desc == "" && t.Annotations != nil {
			desc = t.Annotations.Title
		}
		out = append(out, &remoteTool{
			client: c,
			remote: t.Name,
			info: tool.Info{
				Name:        c.cfg.prefix + t.Name,
				Description: desc,
				Parameters:  params,
				ReadOnly:    t.Annotations != nil && t.Annotations.ReadOnlyHint,
			},
		})
	}
	return out, nil
}

// remoteTool is one tool of an MCP server.
type remoteTool struct {
	client *Client
	remote string // the server's name for it
	info   tool.Info
}

func (t *remoteTool) Info() tool.Info { return t.info }

// ToolError is a failure the tool itself reported (a result with isError).
// Message is the server's text for it.
type ToolError struct {
	Server  string // the server's name (Client.Name)
	Tool    string // the tool's name as the model sees it, prefix included
	Message string // the result's content rendered as text
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("tool %q on MCP server %q failed: %s", e.Tool, e.Server, e.Message)
}

// Call runs the tool on the server. See the package documentation for the
// errors, the timeout and when a call is sent again after a reconnect.
func (t *remoteTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	c, name := t.client, t.info.Name
	arguments, err := objectArgs(name, args)
	if err != nil {
		return "", err
	}
	for attempt := 0; ; attempt++ {
		cn, err := c.session(ctx)
		if err != nil {
			return "", fmt.Errorf("tool %q: %w", name, err)
		}
		res, err := t.callOnce(ctx, cn, arguments)
		if err == nil {
			return t.result(res)
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("tool %q on MCP server %q: %w", name, c.name, ctx.Err())
		}
		if c.isClosed() {
			return "", fmt.Errorf("tool %q: the call was aborted: %w", name, c.errClosed())
		}
		var timeout *timeoutError
		if errors.As(err, &timeout) {
			return "", err
		}
		switch classify(cn, err) {
		case failNotSent:
			c.retire(cn)
			if attempt == 0 {
				continue
			}
		case failLost:
			c.retire(cn)
			if attempt == 0 && t.info.ReadOnly {
				continue
			}
			return "", fmt.Errorf("tool %q on MCP server %q: the connection was lost while the call was running (%v); "+
				"the server may or may not have run it, so it was not sent again; the next call reconnects", name, c.name, lostReason(cn, err))
		}
		return "", t.describe(err)
	}
}

type timeoutError struct {
	tool, server string
	after        time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("tool %q on MCP server %q did not answer within %v; the server was asked to cancel it, "+
		"but it may already have had effects (raise WithCallTimeout for slow tools)", e.tool, e.server, e.after)
}

func (t *remoteTool) callOnce(ctx context.Context, cn *conn, args json.RawMessage) (*sdk.CallToolResult, error) {
	c := t.client
	cctx, cancel := context.WithTimeout(ctx, c.cfg.callTimeout)
	defer cancel()
	stop := context.AfterFunc(c.closeCtx, cancel)
	defer stop()
	res, err := cn.session.CallTool(cctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil && cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil && c.closeCtx.Err() == nil {
		return nil, &timeoutError{tool: t.info.Name, server: c.name, after: c.cfg.callTimeout}
	}
	if err == nil && res == nil {
		err = errors.New("the server sent an empty result")
	}
	return res, err
}

// objectArgs checks that the model sent a JSON object (empty or null count
// as no arguments).
func objectArgs(name string, args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, &tool.ArgumentError{Tool: name, Problem: fmt.Sprintf("the arguments are not valid JSON (%v); send one JSON object", err), Err: err}
	}
	if trimmed[0] != '{' {
		return nil, tool.BadArguments(name, "the arguments must be a JSON object with the tool's parameters, not %s", jsonKind(trimmed[0]))
	}
	return trimmed, nil
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// result turns a call result into the text the model reads.
func (t *remoteTool) result(res *sdk.CallToolResult) (string, error) {
	text := cut(render(res), t.client.cfg.maxResult)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return "", &ToolError{Server: t.client.name, Tool: t.info.Name, Message: text}
	}
	return text, nil
}

func render(res *sdk.CallToolResult) string {
	var parts []string
	hasText := false
	for _, block := range res.Content {
		switch b := block.(type) {
		case *sdk.TextContent:
			parts = append(parts, b.Text)
			hasText = true
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %s]", orUnknown(b.MIMEType), size(len(b.Data))))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %s]", orUnknown(b.MIMEType), size(len(b.Data))))
		case *sdk.ResourceLink:
			line := "[resource link: " + b.URI
			if b.Name != "" && b.Name != b.URI {
				line += " (" + b.Name + ")"
			}
			if b.Description != "" {
				line += ": " + b.Description
			}
			parts = append(parts, line+"]")
		case *sdk.EmbeddedResource:
			r := b.Resource
			switch {
			case r == nil:
				parts = append(parts, "[resource]")
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s (%s)]\n%s", r.URI, orUnknown(r.MIMEType), r.Text))
				hasText = true
			default:
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %s]", r.URI, orUnknown(r.MIMEType), size(len(r.Blob))))
			}
		default:
			parts = append(parts, "[content of an unsupported type]")
		}
	}
	if res.StructuredContent != nil && !hasText {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// cut keeps the first max bytes of text (whole characters) and says how
// much was left out.
func cut(text string, max int) string {
	if len(text) <= max {
		return text
	}
	end := max
	for end > 0 && !utf8.RuneStart(text[end]) {
		end--
	}
	return fmt.Sprintf("%s\n[... result cut: the first %d of %d bytes are shown; the MCP client keeps at most %d (WithMaxResultBytes) ...]",
		text[:end], end, len(text), max)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

func size(n int) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// failure sorts call errors for the retry decision.
type failure int

const (
	// failOther: the server answered, or the transport refused the request
	// while the connection stays usable (HTTP unreachable, 5xx, 429).
	failOther failure = iota
	// failNotSent: the request cannot have run on the server.
	failNotSent
	// failLost: the connection broke while the request was out.
	failLost
)

// Codes the SDK uses inside the client for its own refusals.
const (
	codeRejected = -32005 // the transport refused the request
)

func classify(cn *conn, err error) failure {
	switch {
	case errors.Is(err, sdk.ErrConnectionClosed), // refused before writing: the connection was closing
		errors.Is(err, sdk.ErrSessionMissing), // HTTP 404 for our session: nothing ran
		errors.Is(err, syscall.EPIPE),         // the process was gone before the whole request was written
		cn.gone != nil && cn.gone.Load():      // the server rejected the session
		return failNotSent
	}
	if serverError(err) != nil || isRejected(err) {
		return failOther
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return failLost
	}
	// Anything else (a broken stream, an undecodable message) counts as lost
	// only if the session ends with it.
	select {
	case <-cn.done:
		return failLost
	case <-time.After(100 * time.Millisecond):
		return failOther
	}
}

func lostReason(cn *conn, err error) string {
	if why := cn.ended(); why != "" {
		return why
	}
	return err.Error()
}

// serverError finds the JSON-RPC error the server answered with, skipping
// the SDK's own transport refusal.
func serverError(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	var walk func(error) bool
	walk = func(e error) bool {
		if e == nil {
			return false
		}
		if je, ok := e.(*jsonrpc.Error); ok && je.Code != codeRejected {
			found = je
			return true
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			return walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if walk(inner) {
					return true
				}
			}
		}
		return false
	}
	walk(err)
	return found
}

func isRejected(err error) bool {
	return errors.Is(err, &jsonrpc.Error{Code: codeRejected})
}

// describe turns an error that is not the tool's own into one naming the
// server and tool; invalid params become an *tool.ArgumentError.
func (t *remoteTool) describe(err error) error {
	name, server := t.info.Name, t.client.name
	if je := serverError(err); je != nil {
		if je.Code == jsonrpc.CodeInvalidParams {
			return &tool.ArgumentError{
				Tool:    name,
				Problem: fmt.Sprintf("MCP server %q rejected the call: %s", server, je.Message),
				Err:     err,
			}
		}
		return &wrapped{
			msg: fmt.Sprintf("tool %q on MCP server %q: the server answered with an error: %s (JSON-RPC code %d)", name, server, je.Message, je.Code),
			err: err,
		}
	}
	return fmt.Errorf("tool %q on MCP server %q: %w", name, server, err)
}

// wrapped is an error with its own text that still unwraps to the cause.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
