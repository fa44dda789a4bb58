package main

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps/catalog"
)

// serve --help names the same assistants as trellis list (the apps and
// agent), and lists --db.
func TestServeHelpAndListAgree(t *testing.T) {
	list, err := trellis(t, "", "list")
	if err != nil {
		t.Fatalf("list: %v\n%s", err, list)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		listed = append(listed, strings.Fields(line)[0])
	}
	slices.Sort(listed)
	help, err := trellis(t, "", "serve", "--help")
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, help)
	}
	m := regexp.MustCompile(`(?m)^Assistants: (.+)\.$`).FindStringSubmatch(help)
	if m == nil {
		t.Fatalf("serve --help has no line naming the assistants:\n%s", help)
	}
	inHelp := strings.Split(m[1], ", ")
	slices.Sort(inHelp)
	if !slices.Equal(listed, inHelp) || !slices.Contains(listed, "agent") || len(listed) != len(catalog.All())+1 {
		t.Errorf("trellis list names %v, serve --help names %v; want the same: every app and agent", listed, inHelp)
	}
	if !regexp.MustCompile(`(?m)^\s+--db string`).MatchString(help) {
		t.Errorf("serve --help does not list --db:\n%s", help)
	}
}

// The last thing serve prints at start is the URL to open, after the
// listening line, the auth-off warning and the scripted-models banner.
func TestServePrintsTheURLLast(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRoot()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--config", "/dev/null", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "t.db")})
	t.Setenv("OPENAI_API_KEY", "")
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	openRE := regexp.MustCompile(`(?m)^ *Open (http://127\.0\.0\.1:[0-9]+/) in a browser`)
	deadline := time.Now().Add(30 * time.Second)
	for !openRE.MatchString(out.String()) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve printed no URL to open:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	all := out.String()
	start, _, ok := strings.Cut(all, "msg=\"shutting down")
	if !ok {
		t.Fatalf("no shutdown line:\n%s", all)
	}
	// start ends with the shutdown line's own prefix (time=... level=INFO);
	// drop it, then the blank lines around the URL.
	lines := strings.Split(start, "\n")
	lines = lines[:len(lines)-1]
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		t.Fatalf("nothing printed before the shutdown:\n%s", all)
	}
	m := openRE.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("the last start-up line is %q, not the URL to open:\n%s", lines[len(lines)-1], all)
	}
	listening := regexp.MustCompile(`msg="trellis serve listening" url=(http://[^ ]+)`).FindStringSubmatch(all)
	if listening == nil || listening[1]+"/" != m[1] {
		t.Errorf("the URL to open %q is not the listening line's %v", m[1], listening)
	}
	for _, earlier := range []string{"MODELS ARE SCRIPTED", "auth is off", "trellis serve listening"} {
		if !strings.Contains(start, earlier) {
			t.Errorf("start-up output lacks %q:\n%s", earlier, all)
		}
	}
}
