package apps

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
)

// Prompt renders a prompt template (text/template syntax) over data.
// Every app's prompts are templates of this kind: the defaults are
// exported constants, and a Config (or trellis.yaml) may replace any of
// them; each app documents the fields its templates see. A template that
// does not parse, or names a field data lacks, is an error naming the
// prompt, so a mistyped override fails when the app is built, not when a
// model is asked.
func Prompt(name, text string, data any) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("prompt %s: %w", name, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("prompt %s: %w", name, err)
	}
	return b.String(), nil
}

// Prompts picks each prompt's text: the override when one is set, else the
// default. Apps use it to merge Config.Prompts over their defaults; an
// override naming no prompt of the app is an error listing the names.
func Prompts(defaults, overrides map[string]string) (map[string]string, error) {
	out := maps.Clone(defaults)
	for k, v := range overrides {
		if _, ok := defaults[k]; !ok {
			return nil, fmt.Errorf("prompts: there is no prompt %q; the prompts are %s", k, strings.Join(slices.Sorted(maps.Keys(defaults)), ", "))
		}
		if strings.TrimSpace(v) != "" {
			out[k] = v
		}
	}
	return out, nil
}
