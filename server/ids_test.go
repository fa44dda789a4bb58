package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// One ID rule at create and in paths: a client-chosen thread or assistant
// ID is either refused at create (422 naming the field) or reachable
// afterwards by its path — read and deleted. Never a 200 for an object no
// route can reach.
func TestClientChosenIDsAreReachableOrRefused(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db")}, nil)
	ids := []string{
		"\u0000x", "a\tb", "a\nb", "a\u007fb", "a\u0085b", strings.Repeat("x", 257), ".", "..",
		"plain", "with space", "é-ü", "a?b#c%d", "a/b", strings.Repeat("y", 256), "-", "...",
	}
	refused := 0
	for _, id := range ids {
		for _, kind := range []struct{ create, field, path string }{
			{"/threads", "thread_id", "/threads/"},
			{"/assistants", "assistant_id", "/assistants/"},
		} {
			body, _ := json.Marshal(map[string]any{kind.field: id, "graph_id": "echo"})
			if kind.field == "thread_id" {
				body, _ = json.Marshal(map[string]any{kind.field: id})
			}
			code, out, _ := post(t, r.url+kind.create, string(body))
			switch code {
			case http.StatusUnprocessableEntity:
				refused++
				if !strings.Contains(out, `"/`+kind.field+`"`) {
					t.Errorf("create %s %q: 422 without naming /%s: %s", kind.field, id, kind.field, out)
				}
				continue
			case http.StatusOK:
			default:
				t.Errorf("create %s %q: %d %s", kind.field, id, code, out)
				continue
			}
			u := r.url + kind.path + url.PathEscape(id)
			if code, out, _ := get(t, u); code != http.StatusOK {
				t.Errorf("%s %q was created but GET answers %d %s", kind.field, id, code, out)
			}
			if code, out := del(t, u); code != http.StatusNoContent && code != http.StatusOK {
				t.Errorf("%s %q was created but DELETE answers %d %s", kind.field, id, code, out)
			}
		}
	}
	if refused != 16 {
		t.Errorf("%d creates refused; want the 8 bad IDs refused for both kinds", refused)
	}
}

func del(t *testing.T, u string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
