package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// requireKey puts a proxy in front of the server at target that answers
// 401 to API requests without "Authorization: Bearer <key>" (the page
// itself stays open, as a server requiring a key would serve it).
func requireKey(t *testing.T, target, key string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // streams pass at once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/")
		if !page && r.Header.Get("Authorization") != "Bearer "+key {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"title":"Unauthorized","status":401,"detail":"an API key is required"}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// On a 401 the page asks for an API key, keeps it, and sends it as a
// bearer token from then on.
func TestBrowserAPIKeyPrompt(t *testing.T) {
	b := newBrowser(t)
	url := requireKey(t, serve(t), "s3cret")
	b.do("opening the page", chromedp.Navigate(url))
	b.waitFor("the key prompt", `document.getElementById('key-dialog').open`)
	if got := eval[string](b, `document.activeElement.id`); got != "key-input" {
		t.Errorf("the focus is on %q, not the key field", got)
	}
	b.screenshot("api-key")
	b.do("giving the key", chromedp.SendKeys(chromedp.ID("key-input"), "s3cret\r"))
	b.waitFor("the assistants", `document.querySelectorAll('#assistant option').length > 0 && !document.getElementById('key-dialog').open`)
	if got := eval[string](b, `localStorage.getItem('trellis.apiKey')`); got != "s3cret" {
		t.Errorf("the key kept is %q", got)
	}
	if !eval[bool](b, `document.getElementById('error').hidden`) {
		t.Errorf("an error stays shown: %s", eval[string](b, `document.getElementById('error').textContent`))
	}
	b.pick("evil")
	b.send("hi")
	b.waitFor("the reply through the key", `document.getElementById('messages').innerText.includes('Hello there')`)
}
