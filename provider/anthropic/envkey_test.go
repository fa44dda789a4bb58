package anthropic

import (
	"strings"
	"testing"
)

// ANTHROPIC_API_KEY goes only to Anthropic's API and to
// ANTHROPIC_BASE_URL's server: a model pointed elsewhere by WithBaseURL
// needs its own key (issue 21).
func TestEnvironmentKeyOnlyToItsServer(t *testing.T) {
	t.Setenv(EnvAPIKey, "sk-ant-from-env")
	t.Setenv(EnvBaseURL, "")
	if _, err := New("claude-x", WithBaseURL("http://127.0.0.1:9/")); err == nil || !strings.Contains(err.Error(), "WithAPIKey") {
		t.Errorf("New with a foreign base URL and only the environment's key = %v, want an error asking for WithAPIKey", err)
	}
	if _, err := New("claude-x", WithBaseURL("http://127.0.0.1:9/"), WithAPIKey("own")); err != nil {
		t.Errorf("New with its own key: %v", err)
	}
	t.Setenv(EnvBaseURL, "http://127.0.0.1:9")
	if _, err := New("claude-x", WithBaseURL("http://127.0.0.1:9/")); err != nil {
		t.Errorf("New at ANTHROPIC_BASE_URL's server: %v", err)
	}
	for base, want := range map[string]bool{"": true, DefaultBaseURL: true, "https://api.anthropic.com/": true, "https://evil.example": false} {
		if got := EnvKeyAllowed(base); got != want {
			t.Errorf("EnvKeyAllowed(%q) = %v, want %v", base, got, want)
		}
	}
}
