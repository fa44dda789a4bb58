//go:build unix

package tool

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openNoBlock must not block on a named pipe with no writer (the path
// could be swapped for one between the check and the open).
func TestOpenNoBlockDoesNotBlockOnAPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := openNoBlock(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		// Unblock the opener so the goroutine ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("opening a FIFO blocked")
	}
}
