package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

// ModelToolConfig configures a model sub-call tool (ModelTool).
type ModelToolConfig struct {
	// Name is the tool's name (default "ask_model").
	Name string
	// Description tells the calling model what the sub-model is for (a
	// generic description by default; say what it is good at).
	Description string
	// Model answers the calls. Required.
	Model llm.Model
	// System is the sub-model's own system prompt (may be empty).
	System string
	// MaxTokens bounds each answer (0: the provider's default).
	MaxTokens int
	// Temperature, when set, is passed on.
	Temperature *float64
}

type modelArgs struct {
	Task string `json:"task" jsonschema:"the task for the model, with everything it needs to know: it sees nothing else"`
}

// ModelTool returns a tool that hands a task to another model: each call
// sends the sub-model its system prompt and the task (nothing of the
// caller's history) through llm.Call, so its usage is recorded on the
// running task and its tokens are streamed like any model node's, and
// returns the reply's text. It is a read tool. A failed request becomes a
// tool error message; an empty task is a bad argument.
func ModelTool(cfg ModelToolConfig) (Tool, error) {
	if cfg.Model == nil {
		return nil, errors.New("model tool: ModelToolConfig.Model is nil")
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("model tool: MaxTokens is %d; use a positive bound or 0 for the provider's default", cfg.MaxTokens)
	}
	name := cfg.Name
	if name == "" {
		name = "ask_model"
	}
	desc := cfg.Description
	if desc == "" {
		desc = "Ask another model to do a self-contained task and return its answer. Give it everything it needs in the task: it cannot see this conversation."
	}
	return Func(name, desc, func(ctx context.Context, a modelArgs) (string, error) {
		if strings.TrimSpace(a.Task) == "" {
			return "", BadArguments(name, `"task" is empty; describe the task`)
		}
		req := &llm.Request{MaxTokens: cfg.MaxTokens, Temperature: cfg.Temperature}
		if cfg.System != "" {
			req.Messages = append(req.Messages, llm.System(cfg.System))
		}
		req.Messages = append(req.Messages, llm.User(a.Task))
		resp, err := llm.Call(ctx, cfg.Model, req)
		if err != nil {
			return "", err
		}
		text := resp.Message.Text()
		if strings.TrimSpace(text) == "" {
			return "", fmt.Errorf("model %s gave no text answer (finish reason %q)", cfg.Model.Name(), resp.FinishReason)
		}
		return text, nil
	}, ReadOnly())
}
