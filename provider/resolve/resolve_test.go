package resolve

import "testing"

func TestEndpointNamesWhereRequestsGo(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	for spec, want := range map[string]string{
		"openai:gpt-4o-mini":                                "https://api.openai.com/v1",
		"anthropic:claude-sonnet-4-5":                       "https://api.anthropic.com",
		"ollama:qwen2.5":                                    "http://localhost:11434/v1",
		"openai-compatible:http://10.0.0.5:8000/v1#llama-3": "http://10.0.0.5:8000/v1",
		"nosuch:model":                                      "",
	} {
		if got := Endpoint(spec); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", spec, got, want)
		}
	}
	t.Setenv("OPENAI_BASE_URL", "https://proxy.example/v1")
	if got := Endpoint("openai:gpt-4o-mini"); got != "https://proxy.example/v1" {
		t.Errorf("OPENAI_BASE_URL not shown: %q", got)
	}
	m, endpoint, err := Provider("ollama:qwen2.5")
	if err != nil || endpoint != "http://localhost:11434/v1" || m.Name() == "" {
		t.Errorf("Provider = %v, %q, %v", m, endpoint, err)
	}
}
