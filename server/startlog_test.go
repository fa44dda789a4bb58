package server

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log sink the server's goroutines may write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A library's own main (a Config without WarnAuthOff) logs no "auth is
// off" warning, whose advice names the trellis command; trellis serve
// (WarnAuthOff) does. Both listen on loopback without a key.
func TestAuthOffWarningIsTheCommandsOnly(t *testing.T) {
	for _, c := range []struct {
		name string
		warn bool
	}{{"library main", false}, {"trellis serve", true}} {
		t.Run(c.name, func(t *testing.T) {
			var out lockedBuffer
			log := slog.New(slog.NewTextHandler(&out, nil)) // info and above, as a main logs by default
			r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), Logger: log, WarnAuthOff: c.warn}, nil)
			r.stop(t)
			got := out.String()
			warned := strings.Contains(got, "auth is off") && strings.Contains(got, "level=WARN")
			if warned != c.warn {
				t.Errorf("auth-off warning logged = %v, want %v:\n%s", warned, c.warn, got)
			}
			if c.warn && !strings.Contains(got, "trellis keys create") {
				t.Errorf("the command's warning does not say how to turn auth on:\n%s", got)
			}
		})
	}
}
