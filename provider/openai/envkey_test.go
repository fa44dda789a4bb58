package openai

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/llm"
)

// OPENAI_API_KEY goes only to the official API and to OPENAI_BASE_URL's
// server: a model pointed elsewhere by WithBaseURL sends no key (issue 21),
// and one pointed at OPENAI_BASE_URL's server sends it.
func TestEnvironmentKeyOnlyToItsServer(t *testing.T) {
	t.Setenv(EnvAPIKey, "sk-from-env")
	t.Setenv(EnvBaseURL, "")
	elsewhere := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
	m, err := New(fixtureModel, WithBaseURL(elsewhere.URL+"/v1"), WithHTTPClient(elsewhere.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
		t.Fatal(err)
	}
	if got := elsewhere.last(t).header.Get("Authorization"); got != "" {
		t.Errorf("a base URL from WithBaseURL got Authorization %q; the environment's key is not for it", got)
	}

	configured := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
	t.Setenv(EnvBaseURL, configured.URL+"/v1/")
	m, err = New(fixtureModel, WithBaseURL(configured.URL+"/v1"), WithHTTPClient(configured.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
		t.Fatal(err)
	}
	if got := configured.last(t).header.Get("Authorization"); got != "Bearer sk-from-env" {
		t.Errorf("OPENAI_BASE_URL's server got Authorization %q, want the environment's key", got)
	}

	for base, want := range map[string]bool{
		DefaultBaseURL:                  true,
		"https://API.openai.com/v1/":    true,
		"https://api.openai.com/v2":     false,
		"http://api.openai.com/v1":      false,
		"https://evil.example/v1":       false,
		configured.URL + "/v1":          true,
		configured.URL + "/other":       false,
		"https://u:p@api.openai.com/v1": false,
	} {
		if got := EnvKeyAllowed(base); got != want {
			t.Errorf("EnvKeyAllowed(%q) = %v, want %v", base, got, want)
		}
	}
}
