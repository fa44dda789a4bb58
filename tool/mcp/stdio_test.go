//go:build unix

package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helper returns a Stdio server running this test binary as an MCP server
// whose tools append to the returned log file.
func helper(t *testing.T, mode string) (Stdio, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "calls.log")
	return Stdio{
		Command: exe,
		Args:    []string{"-test.run=^$"},
		Env:     []string{helperEnv + "=" + mode, helperLogEnv + "=" + log},
	}, log
}

func logLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func pidOf(t *testing.T, c *Client) int {
	t.Helper()
	out, err := call(t, toolsByName(t, c)["pid"], `{}`)
	if err != nil {
		t.Fatalf("pid: %v", err)
	}
	pid, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("pid = %q", out)
	}
	return pid
}

// reaped reports whether pid is gone (not even a zombie waiting for Wait).
func reaped(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func waitReaped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !reaped(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still exists (running or a zombie)", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStdioReconnectsAfterTheProcessDies(t *testing.T) {
	server, log := helper(t, "serve")
	c, err := Connect(t.Context(), server, WithName("helper"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := pidOf(t, c)
	if first == os.Getpid() {
		t.Fatal("the helper runs in the test process")
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, c)
	waitReaped(t, first)

	// A write tool: the connection was known dead before the call, so it
	// is sent once, to the new process.
	if out, err := call(t, toolsByName(t, c)["record"], `{}`); err != nil || out != "recorded" {
		t.Fatalf("record after the kill = %q, %v", out, err)
	}
	if got := logLines(t, log); !equal(got, "record") {
		t.Errorf("log = %v, want one record", got)
	}
	second := pidOf(t, c)
	if second == first {
		t.Fatalf("same pid %d after the kill", second)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !reaped(second) {
		t.Errorf("Close returned but process %d still exists", second)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStdioWriteCallLostMidwayIsNotRepeated(t *testing.T) {
	server, log := helper(t, "serve")
	c, err := Connect(t.Context(), server, WithName("helper"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools := toolsByName(t, c)
	if tools["crash"].Info().ReadOnly {
		t.Fatal("crash should be a write tool")
	}
	_, err = call(t, tools["crash"], `{}`)
	if err == nil || !strings.Contains(err.Error(), "may or may not have run") || !strings.Contains(err.Error(), `"helper"`) {
		t.Fatalf("err = %v, want a lost-connection error naming the server", err)
	}
	if got := logLines(t, log); !equal(got, "crash") {
		t.Fatalf("log = %v: the write tool ran %d times, want once", got, len(got))
	}
	// The next call reconnects.
	if out, err := call(t, tools["record"], `{}`); err != nil || out != "recorded" {
		t.Fatalf("record after the crash = %q, %v", out, err)
	}
	if got := logLines(t, log); !equal(got, "crash", "record") {
		t.Errorf("log = %v", got)
	}
}

func TestStdioReadCallLostMidwayIsRetried(t *testing.T) {
	server, log := helper(t, "serve")
	c, err := Connect(t.Context(), server)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, err := call(t, toolsByName(t, c)["crash_read"], `{}`)
	if err != nil || out != "survived" {
		t.Fatalf("crash_read = %q, %v; want the read tool retried on a new process", out, err)
	}
	if got := logLines(t, log); !equal(got, "crash_read", "crash_read") {
		t.Errorf("log = %v, want two runs", got)
	}
}

func TestStdioStartFailureShowsStderr(t *testing.T) {
	server, _ := helper(t, "fail")
	start := time.Now()
	c, err := Connect(t.Context(), server)
	if err == nil {
		c.Close()
		t.Fatal("Connect succeeded")
	}
	for _, want := range []string{"missing API key", "connecting to MCP server", "stdio: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %q", err, want)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Connect took %v to report a process that exits at once", d)
	}
}

func equal(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestStdioHandshakeTimeout(t *testing.T) {
	server, _ := helper(t, "mute")
	start := time.Now()
	c, err := Connect(t.Context(), server, WithConnectTimeout(300*time.Millisecond))
	if err == nil {
		c.Close()
		t.Fatal("Connect succeeded against a server that never answers")
	}
	if !strings.Contains(err.Error(), "no handshake within 300ms") {
		t.Errorf("err = %v, want it to name the connect timeout", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("Connect took %v", d)
	}
}

// A server that never answers and ignores its stdin closing used to make a
// 3 s connect timeout take 8 s: the handshake gave up on time, then closing
// the half-open connection waited 5 s for the process to exit before
// signalling it. The connect timeout now bounds the whole attempt.
func TestStdioConnectTimeoutBoundsTheWholeAttempt(t *testing.T) {
	server, _ := helper(t, "stuck")
	const timeout = time.Second
	start := time.Now()
	c, err := Connect(t.Context(), server, WithConnectTimeout(timeout))
	if err == nil {
		c.Close()
		t.Fatal("Connect succeeded against a server that never answers")
	}
	if !strings.Contains(err.Error(), "no handshake within 1s") {
		t.Errorf("err = %v, want it to name the connect timeout", err)
	}
	if d := time.Since(start); d > 2*timeout {
		t.Errorf("Connect took %v with a %v connect timeout", d, timeout)
	}
}
