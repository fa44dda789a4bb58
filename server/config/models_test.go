package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// models takes a spec or the long form; request_models lists patterns;
// the operator's specs are gathered from assistants and apps.
func TestModelsSection(t *testing.T) {
	f, err := Parse([]byte(`models:
  default: openai:gpt-4o-mini
  local:
    provider: openai-compatible
    base_url: http://10.0.0.5:8000/v1
    model: llama-3
    api_key_env: VLLM_API_KEY
request_models:
  allow: ["openai:*"]
assistants:
  - graph: planner
    name: p
    model: anthropic:claude-x
    config: {configurable: {planner: {phases: {plan: {model: "openai:o3"}}}}}
apps:
  builder:
    judge: {model: "openai:judge"}
`), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Specs(); got["default"] != "openai:gpt-4o-mini" || got["local"] != "openai-compatible:http://10.0.0.5:8000/v1#llama-3" {
		t.Errorf("Specs = %v", got)
	}
	if f.ModelSpec("") != "openai:gpt-4o-mini" || f.ModelSpec("local") != "openai-compatible:http://10.0.0.5:8000/v1#llama-3" {
		t.Errorf("ModelSpec: %q %q", f.ModelSpec(""), f.ModelSpec("local"))
	}
	if got := f.OperatorSpecs(); !slices.Equal(got, []string{"anthropic:claude-x", "openai:o3", "openai:judge"}) {
		t.Errorf("OperatorSpecs = %v", got)
	}
	if !MatchPattern("openai:*", "openai:gpt-4o") || MatchPattern("openai:*", "openai-compatible:http://x/v1#m") || !MatchPattern("openai-compatible:*", "openai-compatible:http://x/v1#m") {
		t.Error("MatchPattern")
	}
	for src, want := range map[string]string{
		"models:\n  x:\n    provider: openai-compatible\n    model: m\n":              "models.x.base_url: required",
		"models:\n  x:\n    provider: nosuch\n    model: m\n":                         `models.x.provider: "nosuch"`,
		"models:\n  x:\n    provider: openai\n    model: m\n    api_key_env: 'A B'\n": "models.x.api_key_env",
		"models:\n  x:\n    provider: openai\n    modle: m\n":                         `unknown field "modle"`,
		"request_models:\n  allow: [gpt]\n":                                           "request_models.allow[0]",
		"models:\n  \"a:b\": openai:x\n":                                              "is not a model name",
	} {
		if _, err := Parse([]byte(src), os.LookupEnv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", src, err, want)
		}
	}
}
