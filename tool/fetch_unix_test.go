//go:build unix

package tool_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/tool"
)

// A named pipe with no writer used to block the read forever, whatever the
// context said; it is now refused before it is opened.
func TestFileReaderRefusesNamedPipesAndDevices(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	rd, err := tool.FileReader(tool.FileReaderConfig{Files: []string{fifo, "/dev/zero"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, want := range []string{"it is a named pipe", "it is a device"} {
		start := time.Now()
		_, err := readIndex(t, rd, ctx, i+1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("file %d: err = %v, want it to say %q", i+1, err, want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("file %d: took %v", i+1, d)
		}
	}
}
