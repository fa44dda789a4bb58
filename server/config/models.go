package config

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ModelEntry is one named model under models: a spec in short form
//
//	fast: openai:gpt-4o-mini
//
// or the long form, naming the server and the environment variable of its
// key, so the key goes to that server and nowhere else:
//
//	local:
//	  provider: openai-compatible        # openai, anthropic or openai-compatible
//	  base_url: http://10.0.0.5:8000/v1
//	  model: llama-3
//	  api_key_env: VLLM_API_KEY          # optional
type ModelEntry struct {
	// Spec is the short form ("openai:gpt-4o-mini"); empty in the long
	// form.
	Spec string `yaml:"spec"`
	// Provider is openai, anthropic or openai-compatible (long form).
	Provider string `yaml:"provider"`
	// Model is the model name as the provider knows it (long form).
	Model string `yaml:"model"`
	// BaseURL is the server's base URL (long form; "" : the provider's
	// own, or its *_BASE_URL environment variable).
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the key sent to
	// BaseURL ("" : the provider's own variable, which is only ever sent
	// to the provider's own server or its *_BASE_URL).
	APIKeyEnv string `yaml:"api_key_env"`
}

// UnmarshalYAML reads a spec string or the long form's mapping.
func (e *ModelEntry) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*e = ModelEntry{Spec: n.Value}
		return nil
	}
	if n.Kind == yaml.MappingNode {
		// n.Decode does not inherit the decoder's KnownFields.
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch k := n.Content[i].Value; k {
			case "spec", "provider", "model", "base_url", "api_key_env":
			default:
				return fmt.Errorf("line %d: unknown field %q (known: spec, provider, model, base_url, api_key_env)", n.Content[i].Line, k)
			}
		}
	}
	type plain ModelEntry
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*e = ModelEntry(p)
	return nil
}

// SpecString is the entry's model spec: Spec in the short form; in the
// long form provider:model, or provider:BASE_URL#model with a base URL
// (the form the resolver of `trellis serve` matches back to the entry).
func (e ModelEntry) SpecString() string {
	if e.Spec != "" {
		return strings.TrimSpace(e.Spec)
	}
	if e.BaseURL != "" {
		return e.Provider + ":" + e.BaseURL + "#" + e.Model
	}
	return e.Provider + ":" + e.Model
}

// Long reports whether the entry is in the long form.
func (e ModelEntry) Long() bool { return e.Spec == "" }

func (e ModelEntry) check(field string) []error {
	var errs []error
	bad := func(f, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", f, fmt.Sprintf(format, args...)))
	}
	if e.Spec != "" && (e.Provider != "" || e.Model != "" || e.BaseURL != "" || e.APIKeyEnv != "") {
		bad(field, "give either spec or provider/model/base_url/api_key_env, not both")
		return errs
	}
	if !e.Long() {
		if !strings.Contains(e.Spec, ":") {
			bad(field, "%q is not a model spec like openai:gpt-4o-mini", e.Spec)
		}
		return errs
	}
	switch e.Provider {
	case "openai", "anthropic", "openai-compatible":
	case "":
		bad(field+".provider", "required: openai, anthropic or openai-compatible (or give the model as a spec string)")
	default:
		bad(field+".provider", "%q is not openai, anthropic or openai-compatible", e.Provider)
	}
	if strings.TrimSpace(e.Model) == "" {
		bad(field+".model", "required: the model name as the provider knows it")
	}
	if e.BaseURL != "" {
		if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(field+".base_url", "%q is not an http(s) URL", e.BaseURL)
		}
	} else if e.Provider == "openai-compatible" {
		bad(field+".base_url", "required for provider openai-compatible")
	}
	if e.APIKeyEnv != "" && !envName.MatchString(e.APIKeyEnv) {
		bad(field+".api_key_env", "%q is not an environment variable name", e.APIKeyEnv)
	}
	return errs
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// RequestModels says which models a request (an assistant created or
// updated over the API, its app settings) may name besides the names
// under models.
//
//	request_models:
//	  allow: ["openai:*", "anthropic:claude-*"]
//	  allow_private: false
type RequestModels struct {
	// Allow are patterns of model specs a request may name; "*" matches
	// any run of characters. A spec allowed only by a pattern gets no key
	// but the provider's own (sent only to the provider's own server),
	// and its connections are refused to loopback, private and
	// link-local addresses unless AllowPrivate.
	Allow []string `yaml:"allow"`
	// AllowPrivate lets the specs Allow admits reach loopback, private
	// and link-local addresses.
	AllowPrivate bool `yaml:"allow_private"`
}

func (r RequestModels) check() []error {
	var errs []error
	for i, p := range r.Allow {
		if !strings.Contains(p, ":") {
			errs = append(errs, fmt.Errorf("request_models.allow[%d]: %q is not a pattern of model specs such as openai:*", i, p))
		} else if _, err := path.Match(strings.ReplaceAll(p, "/", "\x00"), ""); err != nil {
			errs = append(errs, fmt.Errorf("request_models.allow[%d]: %q: %v", i, p, err))
		}
	}
	return errs
}

// MatchPattern reports whether spec matches an allow pattern: "*"
// matches any run of characters (slashes too), "?" one character.
func MatchPattern(pattern, spec string) bool {
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(spec, "/", "\x00"))
	return ok
}

// Specs maps each name under models to its spec (SpecString).
func (f *File) Specs() map[string]string {
	out := make(map[string]string, len(f.Models))
	for name, e := range f.Models {
		out[name] = e.SpecString()
	}
	return out
}

// OperatorSpecs lists the model specs the operator wrote elsewhere than
// under models: in the assistants (model, history.model and every "model"
// member of their config) and in the apps' settings. They are the
// operator's choice, so a request naming one is allowed.
func (f *File) OperatorSpecs() []string {
	var out []string
	add := func(s string) {
		if strings.Contains(s, ":") && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, a := range f.Assistants {
		add(a.Model)
		if a.History != nil {
			add(a.History.Model)
		}
		for _, m := range a.Middleware {
			add(m.Model)
			for _, name := range m.Models {
				add(name)
			}
		}
		ModelFields(a.Config, "", func(_, s string) { add(s) })
	}
	for _, app := range slices.Sorted(mapsKeys(f.Apps)) {
		ModelFields(f.Apps[app], "", func(_, s string) { add(s) })
	}
	if f.Store.Index != nil {
		add(f.Store.Index.Embed)
	}
	return out
}

// ModelFields calls fn with the JSON pointer (under at) and the value of
// every string member named "model" (or ending in "_model") in v, a
// decoded JSON or YAML value: the fields that name models in assistants'
// configs and the apps' settings.
func ModelFields(v any, at string, fn func(pointer, value string)) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(mapsKeys(x)) {
			p := at + "/" + escapePointer(k)
			if s, ok := x[k].(string); ok && (k == "model" || strings.HasSuffix(k, "_model")) {
				fn(p, s)
				continue
			}
			ModelFields(x[k], p, fn)
		}
	case []any:
		for i, e := range x {
			ModelFields(e, fmt.Sprintf("%s/%d", at, i), fn)
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
