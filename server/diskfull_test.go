package server

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trellis-agents/trellis/llm/llmtest"
)

// On a really full disk (the SQLite file on a small tmpfs, filled up),
// writes answer "the storage is full" on every wire — 507 problem+json on
// the LangGraph API, 507 with OpenAI's error object on /v1, 507
// problem+json on AG-UI — never "internal error ... a bug in Trellis";
// once space is freed, writes succeed again. It needs to mount a tmpfs
// (root); elsewhere it skips.
func TestFullDiskIsInsufficientStorageOnEveryWire(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", disk).Run() })

	model := llmtest.New()
	model.Otherwise(llmtest.Text("hello"))
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(disk, "t.db"), DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("chat", chatSpec(model)); err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	if code, body, _ := post(t, r.url+"/threads", `{}`); code != 200 {
		t.Fatalf("create a thread before the disk is full: %d %s", code, body)
	}

	filler := filepath.Join(disk, "filler")
	fill(t, filler)
	pad := strings.Repeat("x", 256<<10) // a write that needs new pages
	for _, c := range []struct{ wire, path, body, want string }{
		{"langgraph", "/threads", `{"metadata":{"pad":"` + pad + `"}}`, `"status":507`},
		{"openai", "/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"` + pad + `"}]}`, `"code":"storage_full"`},
		{"agui", "/ag-ui/chat", `{"threadId":"full-1","runId":"r1","messages":[{"id":"m1","role":"user","content":"` + pad + `"}]}`, `"status":507`},
	} {
		code, body, _ := post(t, r.url+c.path, c.body)
		if code != 507 || !strings.Contains(body, c.want) || !strings.Contains(body, "storage is full") || strings.Contains(body, disk) {
			t.Errorf("%s on a full disk: %d %s; want 507 saying the storage is full (%s), without the file's path", c.wire, code, body, c.want)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := post(t, r.url+"/threads", `{"metadata":{"pad":"`+pad+`"}}`); code != 200 {
		t.Errorf("after space was freed: %d %s", code, body)
	}
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}
