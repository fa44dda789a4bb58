package baseurl

import "testing"

func TestSame(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"https://api.openai.com/v1", "HTTPS://API.openai.com/v1/", true},
		{"https://api.openai.com/v1", "https://api.openai.com/v2", false},
		{"https://api.openai.com/v1", "http://api.openai.com/v1", false},
		{"https://u:p@api.openai.com/v1", "https://api.openai.com/v1", false},
		{"", "", false},
		{"api.openai.com/v1", "api.openai.com/v1", false},
	} {
		if got := Same(c.a, c.b); got != c.want {
			t.Errorf("Same(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
