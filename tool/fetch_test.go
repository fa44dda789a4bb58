package tool_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/tool"
)

// readIndex calls a file reader for file i.
func readIndex(t *testing.T, rd tool.Tool, ctx context.Context, i int) (string, error) {
	t.Helper()
	return rd.Call(ctx, mustJSON(t, map[string]int{"index": i}))
}

func TestFileReaderRefusesNonPublicAddressesUnlessAllowed(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits++
		_, _ = w.Write([]byte("internal secret"))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	// By IP, and by a name that resolves to loopback: the check is made
	// on the address dialled, after resolution.
	files := []string{srv.URL + "/a.txt", "http://localhost:" + port + "/a.txt"}
	for _, client := range []*http.Client{nil, srv.Client()} {
		rd, err := tool.FileReader(tool.FileReaderConfig{Files: files, Client: client})
		if err != nil {
			t.Fatal(err)
		}
		for i := range files {
			_, err := readIndex(t, rd, context.Background(), i+1)
			if err == nil || !strings.Contains(err.Error(), "is a loopback address") || !strings.Contains(err.Error(), "AllowPrivateNetworks") {
				t.Errorf("file %d: err = %v, want a refusal naming the loopback address and the option", i+1, err)
			}
		}
	}
	if hits != 0 {
		t.Errorf("the server was reached %d times", hits)
	}

	rd, err := tool.FileReader(tool.FileReaderConfig{Files: files, AllowPrivateNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if got, err := readIndex(t, rd, context.Background(), i+1); err != nil || !strings.HasSuffix(got, "internal secret") {
			t.Errorf("allowed, file %d: %q, %v", i+1, got, err)
		}
	}
}

func TestFileReaderBoundsRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.test/x.txt", http.StatusFound)
	})
	mux.HandleFunc("/two", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/one", http.StatusFound)
	})
	mux.HandleFunc("/one", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/end.txt", http.StatusFound)
	})
	mux.HandleFunc("/end.txt", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("arrived")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	files := []string{srv.URL + "/loop", srv.URL + "/ftp", srv.URL + "/two"}
	rd, err := tool.FileReader(tool.FileReaderConfig{Files: files, AllowPrivateNetworks: true, MaxRedirects: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readIndex(t, rd, context.Background(), 1); err == nil || !strings.Contains(err.Error(), "redirects more than 2 times") {
		t.Errorf("redirect loop: err = %v", err)
	}
	if _, err := readIndex(t, rd, context.Background(), 2); err == nil || !strings.Contains(err.Error(), "redirects to a ftp URL") {
		t.Errorf("redirect to ftp: err = %v", err)
	}
	if got, err := readIndex(t, rd, context.Background(), 3); err != nil || !strings.HasSuffix(got, "arrived") {
		t.Errorf("two redirects: %q, %v", got, err)
	}
	if _, err := tool.FileReader(tool.FileReaderConfig{Files: files, MaxRedirects: -1}); err == nil || !strings.Contains(err.Error(), "MaxRedirects is -1") {
		t.Errorf("negative MaxRedirects: err = %v", err)
	}
	other := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}
	if _, err := tool.FileReader(tool.FileReaderConfig{Files: files, Client: other}); err == nil || !strings.Contains(err.Error(), "cannot check") {
		t.Errorf("unknown transport: err = %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestFileReaderHonoursTheContextOnLocalFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, []byte(strings.Repeat("z", 300<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	rd, err := tool.FileReader(tool.FileReaderConfig{Files: []string{p}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := readIndex(t, rd, ctx, 1); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("cancelled read: err = %v", err)
	}
	if got, err := readIndex(t, rd, context.Background(), 1); err != nil || len(got) < 300<<10 {
		t.Errorf("read: %d bytes, %v", len(got), err)
	}
}
