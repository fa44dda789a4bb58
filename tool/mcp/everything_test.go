//go:build unix

package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/tool"
)

// The reference MCP server from npm, run by node.
const (
	everythingVar     = "TRELLIS_MCP_EVERYTHING"
	everythingPackage = "@modelcontextprotocol/server-everything@2026.8.31"
)

// everything returns the server's entry script, or skips the test (fails
// it under TRELLIS_REQUIRE_SERVICES=1) when node or the package is missing.
func everything(t *testing.T) string {
	t.Helper()
	install := `npm install --prefix "${XDG_CACHE_HOME:-$HOME/.cache}/trellis/npm" ` + everythingPackage +
		` and set ` + everythingVar + `=<that folder>/node_modules/@modelcontextprotocol/server-everything/dist/index.js (.ci/run does both)`
	missing := func(msg string) {
		t.Helper()
		if testenv.Required() {
			t.Fatal(testenv.RequireVar + "=1 but " + msg)
		}
		t.Skip(msg)
	}
	entry := os.Getenv(everythingVar)
	if entry == "" {
		missing("the MCP integration tests need node and " + everythingVar + ": " + install)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("the MCP integration tests need node on PATH (" + err.Error() + ")")
	}
	if _, err := os.Stat(entry); err != nil {
		missing(everythingVar + " does not point at the server's entry script (" + err.Error() + "): " + install)
	}
	return entry
}

// rawListing lists the tools with the SDK alone, as the reference the
// Trellis tools are checked against.
func rawListing(t *testing.T, entry string) map[string]*sdk.Tool {
	t.Helper()
	cl := sdk.NewClient(&sdk.Implementation{Name: "raw", Version: "1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	s, err := cl.Connect(t.Context(), &sdk.CommandTransport{Command: exec.Command("node", entry, "stdio")}, nil)
	if err != nil {
		t.Fatalf("raw SDK connect: %v", err)
	}
	defer s.Close()
	out := map[string]*sdk.Tool{}
	for tl, err := range s.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("raw SDK listing: %v", err)
		}
		out[tl.Name] = tl
	}
	return out
}

// checkEverything checks the listing against the raw one and calls a few
// tools; it returns the tools by name.
func checkEverything(t *testing.T, c *Client, raw map[string]*sdk.Tool) map[string]tool.Tool {
	t.Helper()
	tools := toolsByName(t, c)
	var got, want []string
	for n := range tools {
		got = append(got, n)
	}
	for n := range raw {
		want = append(want, n)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("tools = %v\nwant %v", got, want)
	}
	for _, name := range []string{"echo", "get-sum", "get-tiny-image", "toggle-simulated-logging"} {
		if tools[name] == nil {
			t.Fatalf("no tool %q among %v", name, got)
		}
	}
	readOnly := 0
	for name, tl := range tools {
		r := raw[name]
		if r == nil {
			continue
		}
		info := tl.Info()
		wantRO := r.Annotations != nil && r.Annotations.ReadOnlyHint
		if info.ReadOnly != wantRO {
			t.Errorf("%s: ReadOnly = %v, annotations say readOnlyHint %v", name, info.ReadOnly, wantRO)
		}
		if wantRO {
			readOnly++
		}
		schema, _ := json.Marshal(r.InputSchema)
		if !sameJSON(t, info.Parameters, schema) {
			t.Errorf("%s: schema = %s\nwant %s", name, info.Parameters, schema)
		}
		if info.Description != r.Description {
			t.Errorf("%s: description = %q, want %q", name, info.Description, r.Description)
		}
	}
	if readOnly == 0 || readOnly == len(tools) {
		t.Errorf("%d of %d tools are read tools; the server has both kinds", readOnly, len(tools))
	}
	if !tools["echo"].Info().ReadOnly || !tools["get-sum"].Info().ReadOnly || tools["toggle-simulated-logging"].Info().ReadOnly {
		t.Errorf("echo and get-sum should be read tools, toggle-simulated-logging a write tool")
	}

	for _, tc := range []struct{ tool, args, want string }{
		{"echo", `{"message":"hello from trellis"}`, "Echo: hello from trellis"},
		{"get-sum", `{"a":2,"b":3.5}`, "The sum of 2 and 3.5 is 5.5."},
		{"get-tiny-image", `{}`, "Here's the image you requested:\n[image: image/png, "},
	} {
		out, err := call(t, tools[tc.tool], tc.args)
		if err != nil || !strings.HasPrefix(out, tc.want) {
			t.Errorf("%s(%s) = %q, %v\nwant %q", tc.tool, tc.args, out, err, tc.want)
		}
	}
	_, err := call(t, tools["get-sum"], `{"a":"two","b":3}`)
	var te *ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "a") {
		t.Errorf("get-sum with a string: err = %v, want the server's validation error as *ToolError", err)
	}
	return tools
}

func TestEverythingOverStdio(t *testing.T) {
	entry := everything(t)
	raw := rawListing(t, entry)
	start := time.Now()
	c, err := Connect(t.Context(), Stdio{Command: "node", Args: []string{entry, "stdio"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("connected in %v as %q", time.Since(start), c.Name())
	tools := checkEverything(t, c, raw)

	// Kill the server: the next call starts a new one.
	first := serverPID(t, c)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, c)
	waitReaped(t, first)
	if out, err := call(t, tools["echo"], `{"message":"again"}`); err != nil || out != "Echo: again" {
		t.Fatalf("echo after the kill = %q, %v", out, err)
	}
	second := serverPID(t, c)
	if second == first {
		t.Fatal("the server was not restarted")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !reaped(second) {
		t.Errorf("node process %d still exists after Close", second)
	}
}

func serverPID(t *testing.T, c *Client) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || c.cur.cmd == nil || c.cur.cmd.Process == nil {
		t.Fatal("no server process")
	}
	return c.cur.cmd.Process.Pid
}

func TestEverythingOverStreamableHTTP(t *testing.T) {
	entry := everything(t)
	raw := rawListing(t, entry)
	port := freePort(t)
	stop := startHTTPServer(t, entry, port)
	c, err := Connect(t.Context(), HTTP{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}, WithName("everything"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools := checkEverything(t, c, raw)

	// Restart the server: it forgets the session, and the next call opens
	// a new one instead of failing from now on. The call is a write tool's:
	// the server rejected the old session before running anything, so even
	// a write is sent again.
	c.mu.Lock()
	old := c.cur
	c.mu.Unlock()
	stop()
	startHTTPServer(t, entry, port)
	out, err := call(t, tools["toggle-simulated-logging"], `{}`)
	if err != nil || !strings.HasPrefix(out, "Started simulated") {
		t.Fatalf("toggle-simulated-logging after the restart = %q, %v", out, err)
	}
	c.mu.Lock()
	renewed := c.cur != old
	c.mu.Unlock()
	if !renewed || !old.gone.Load() {
		t.Errorf("new session: %v, old one marked gone: %v; want the dropped session noticed and replaced", renewed, old.gone.Load())
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startHTTPServer runs the streamable HTTP variant on port until the test
// ends or the returned stop is called, and waits until it listens.
func startHTTPServer(t *testing.T, entry string, port int) (stop func()) {
	t.Helper()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	out := &tailWriter{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
			return stop
		}
		select {
		case <-exited:
			t.Fatalf("the HTTP server exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the HTTP server does not listen on port %d after 20 s: %s", port, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
