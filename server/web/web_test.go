package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/web"
)

func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// The page is served at / and its files under /ui/, with a content
// security policy that allows no inline or foreign script; folders and
// missing files are problems; other paths are left to the API's mux.
func TestMount(t *testing.T) {
	mux := http.NewServeMux()
	web.Mount(mux)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))

	res, body := get(t, mux, "GET", "/")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, `<script type="module" src="/ui/app.js">`) {
		t.Fatalf("GET /: %d %s %.200s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("GET /: CSP %q", csp)
	}
	for path, ctype := range map[string]string{
		"/ui/app.js": "text/javascript", "/ui/style.css": "text/css",
		"/ui/vendor/marked.js": "text/javascript", "/ui/vendor/dompurify.js": "text/javascript",
	} {
		res, body := get(t, mux, "GET", path)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), ctype) || body == "" {
			t.Errorf("GET %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	for _, path := range []string{"/ui/", "/ui/vendor/", "/ui/nope.js", "/ui/vendor/LICENSE.none"} {
		res, body := get(t, mux, "GET", path)
		if res.StatusCode != 404 || !strings.Contains(res.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("GET %s: %d %s %s", path, res.StatusCode, res.Header.Get("Content-Type"), body)
		}
	}
	// Other methods and paths are not the page's.
	for _, r := range [][2]string{{"POST", "/"}, {"GET", "/threads"}, {"DELETE", "/ui/app.js"}} {
		if res, _ := get(t, mux, r[0], r[1]); res.StatusCode != http.StatusTeapot && res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d, want the API's answer", r[0], r[1], res.StatusCode)
		}
	}
}
