// Package web serves the page a person opens to use and supervise the
// agents of `trellis serve`: a chat with the assistants, the questions,
// forms, plan reviews and tool approvals they raise, answered in the page.
//
// The page is plain JavaScript modules and CSS embedded in the binary, with
// no build step; it talks to the server only through the public HTTP API,
// as any client does. Third-party modules (a Markdown renderer, an HTML
// sanitizer and a code highlighter) are vendored under static/vendor byte
// for byte at versions pinned in vendor-src, whose check script CI runs;
// see the README there.
package web

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/trellis-agents/trellis/server/api/wire"
)

//go:embed static
var static embed.FS

// Prefix is the path under which the page's assets are served.
const Prefix = "/ui/"

// Files returns the page's files: index.html at the root, the modules and
// styles beside it and the vendored modules under vendor/.
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // "static" is embedded above; a missing one is a build bug
	}
	return sub
}

// Mux is what Mount registers on: an *http.ServeMux, or a wrapper of one.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Mount adds the page to mux: GET / answers index.html and GET /ui/...
// the assets. Neither is an API route: they are not in the route table or
// the OpenAPI document, and no API path starts with /ui/. They need no API
// key (the page asks for one and sends it with its API calls).
func Mount(mux Mux) {
	files := Files()
	assets := http.StripPrefix(Prefix, http.FileServerFS(files))
	mux.Handle("GET "+Prefix, headers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Files only: a folder (no listings) or a missing file is a
		// problem, as every unknown path of the server is.
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if st, err := fs.Stat(files, name); err != nil || st.IsDir() || !fs.ValidPath(name) {
			wire.NewProblem(http.StatusNotFound, fmt.Sprintf("no file %s; the page is at /", r.URL.Path)).Write(w, r)
			return
		}
		assets.ServeHTTP(w, r)
	})))
	mux.Handle("GET /{$}", headers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, files, "index.html")
	})))
}

// headers adds a content security policy that allows only the page's own
// scripts (no inline script, no eval) and keeps caches honest: the assets
// change with the binary, so the browser revalidates them.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}
