package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"text/template"

	"github.com/trellis-agents/trellis/tool"
)

// DefaultUnavailablePrompt is the answer of a turn whose router model
// request failed, unless Prompts.Unavailable replaces it.
const DefaultUnavailablePrompt = "I'm sorry, I could not handle this request just now: the service that answers it is not responding. " +
	"Please try again in a moment; your conversation is kept, so you can simply send your message again."

// Prompts replaces the router's own texts. Each is a text/template over
// PromptData; an empty field keeps the default.
type Prompts struct {
	// System, when set, is the system prompt instead of Config.System, as
	// a template ("You route to{{range .Agents}} {{.Name}}{{end}}.").
	System string
	// Budget is added to the last request the step budget allows
	// (DefaultBudgetPrompt).
	Budget string
	// Unavailable is the answer when the router model fails
	// (DefaultUnavailablePrompt); Error holds the failure, should the text
	// mention it.
	Unavailable string
}

// PromptData is what the router's templates can use.
type PromptData struct {
	// Name is Config.Name.
	Name string
	// Agents are the sub-agents, in Config order.
	Agents []AgentInfo
	// Tools are the plain tools' names, in Config order.
	Tools []string
	// Error is the model's failure (Unavailable only).
	Error string
}

// AgentInfo names a sub-agent for templates.
type AgentInfo struct{ Name, Description string }

type texts struct {
	system, budget, unavailable *template.Template
}

// parseTexts parses the router's templates and runs each on the router's
// data, reporting every problem in one error.
func parseTexts(p Prompts, d PromptData) (*texts, error) {
	var errs []error
	one := func(field, src, def string) *template.Template {
		if strings.TrimSpace(src) == "" {
			src = def
		}
		t, err := template.New(field).Parse(src)
		if err == nil {
			sample := d
			sample.Error = "sample error"
			err = t.Execute(&strings.Builder{}, sample)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("router: %s is not a usable template (see PromptData for its fields): %w", field, err))
			return nil
		}
		return t
	}
	t := &texts{
		budget:      one("Config.Prompts.Budget", p.Budget, DefaultBudgetPrompt),
		unavailable: one("Config.Prompts.Unavailable", p.Unavailable, DefaultUnavailablePrompt),
	}
	if strings.TrimSpace(p.System) != "" {
		t.system = one("Config.Prompts.System", p.System, "")
	}
	return t, errors.Join(errs...)
}

// render executes a template checked by New; a failure on this data (it
// ran on the same data then) leaves the text it wrote.
func (t *texts) render(tm *template.Template, d PromptData) string {
	var b strings.Builder
	_ = tm.Execute(&b, d)
	return b.String()
}

// unavailable is the outcome of a turn whose model request failed.
func (r *router) unavailable(ctx context.Context, err error) Outcome {
	r.log.ErrorContext(ctx, "router: the model request failed; answering that the request could not be handled", slog.Any("error", err))
	d := r.data
	d.Error = err.Error()
	return Outcome{Reason: ReasonUnavailable, Answer: r.texts.render(r.texts.unavailable, d), Error: err.Error()}
}

// plainTools lists the tools' names.
func plainTools(tools []tool.Tool) []string {
	var out []string
	for _, t := range tools {
		if t != nil {
			out = append(out, t.Info().Name)
		}
	}
	return out
}
