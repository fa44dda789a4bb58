// Package builder is the builder app: a support agent of two LLM nodes
// made with agent/builder. "answer" drafts a reply to a customer (it may
// look up the returns policy), "review" checks it, and a model judges after
// each review whether the reviewer asked for changes: if so the draft goes
// back to "answer", otherwise the run ends.
//
// # Embedding
//
// New(ctx, Config{Model}) builds the app; Tools, AnswerPrompt,
// ReviewPrompt and MaxIterations replace the defaults, and Agent replaces
// the whole agent with one declared as data (agentbuilder.Spec: nodes
// with descriptions, prompts, tools, retries and timeouts; edges,
// conditions, parallel branches and joins). In trellis.yaml:
//
//	apps:
//	  builder:
//	    agent:
//	      name: triage
//	      nodes:
//	        - {name: plan, prompt: "Plan the reply.", description: "Plans."}
//	        - {name: facts, prompt: "Find the facts.", tools: [lookup_policy], retries: 2, timeout: 30s}
//	        - {name: tone, prompt: "Choose the tone."}
//	        - {name: write, prompt: "Write the reply."}
//	      entry: plan
//	      parallel: [{from: plan, to: [facts, tone]}]
//	      joins: [{to: write, from: [facts, tone]}]
//	      end: [write]
//	    judge: {model: cheap, temperature: 0, max_tokens: 200}   # the judging phase
//	    history: {policy: last_turns, turns: 8}                  # what nodes and judge see
//
// In code, Config.Judge (llm.Settings) and Config.History (a policy of
// llm/history) do the same; Entry maps the file's settings onto Config,
// resolving model names through apps.Env.Resolve. See Example and Config.
package builder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	agentbuilder "github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// Question is the customer message the example answers.
const Question = "I bought headphones 20 days ago and one side stopped working. Can I still return them?"

// Condition is the natural-language condition on the review node's edge.
const Condition = "the reviewer asked for changes to the reply"

type policyArgs struct {
	Topic string `json:"topic" jsonschema:"returns, warranty or shipping"`
}

var policies = map[string]string{
	"returns":  "Items can be returned within 30 days of delivery for a refund, in any condition if faulty.",
	"warranty": "Electronics carry a 2-year warranty covering defects; repair or replacement at our choice.",
	"shipping": "Return shipping is free for faulty items; we email a prepaid label.",
}

// PolicyTool looks up the shop's policy on a topic (a read tool).
func PolicyTool() tool.Tool {
	return tool.MustFunc("lookup_policy", "Look up the shop's policy on returns, warranty or shipping.",
		func(_ context.Context, a policyArgs) (string, error) {
			p, ok := policies[a.Topic]
			if !ok {
				return "", tool.BadArguments("lookup_policy", "unknown topic %q; use returns, warranty or shipping", a.Topic)
			}
			return p, nil
		}, tool.ReadOnly())
}

// The default prompts of the two nodes, templates over PromptData.
const (
	AnswerPrompt = "You answer customers of an electronics shop. Check the policy with {{.Tools}} before promising anything. Be brief and kind."
	ReviewPrompt = "You review a support reply for accuracy against the shop's policy and for tone. Say plainly whether changes are needed and which."
)

// PromptData is what the AnswerPrompt and ReviewPrompt templates see.
type PromptData struct {
	// Tools lists the answer node's tools by name ("lookup_policy").
	Tools string
}

// Reviewer is the voice of the review node's messages (llm.Message.Name):
// its critique is the agent's working, which a thread's transcript shows
// in the run's timeline, not as a reply to the customer.
const Reviewer = "reviewer"

// Name is the app's name.
const Name = "builder"

// Summary says in one line what the app does.
const Summary = "a two-node support agent (answer, review) with a model-judged edge, built with agent/builder"

// Config configures the builder app. Model is required; every other field
// has the default its comment names.
type Config struct {
	// Model drafts, reviews and judges (required; Script() for the
	// scripted demo model).
	Model llm.Model
	// Tools are the answer node's tools (default: PolicyTool()).
	Tools []tool.Tool
	// AnswerPrompt and ReviewPrompt instruct the two nodes (defaults
	// AnswerPrompt and ReviewPrompt); both are templates over PromptData.
	AnswerPrompt, ReviewPrompt string
	// Request is the customer message App.Input("") uses (default
	// Question).
	Request string
	// MaxIterations bounds the answer-review rounds (default 8).
	MaxIterations int
	// Agent, when set, replaces the two-node agent with one declared as
	// data (trellis.yaml's apps.builder.agent); its nodes name their tools
	// among Tools (by name; default PolicyTool()).
	Agent *agentbuilder.Spec
	// Judge are the judging phase's model settings (the model that
	// decides the conditional edges, its temperature, top-p, max tokens
	// and reasoning effort; zero: Model with the provider's defaults).
	Judge llm.Settings
	// History is the message-history policy of every node and of the
	// judge (package llm/history; nil: the whole conversation).
	History history.Policy
	// Middleware wraps every node's model and tool calls and the judge's
	// model calls, in order (agent/builder's Builder.Middleware).
	Middleware []middleware.Middleware
}

// Settings is what trellis.yaml's apps.builder carries (see Entry).
type Settings struct {
	AnswerPrompt  string             `json:"answer_prompt,omitempty"`
	ReviewPrompt  string             `json:"review_prompt,omitempty"`
	MaxIterations int                `json:"max_iterations,omitempty"`
	Agent         *agentbuilder.Spec `json:"agent,omitempty"`
	// Judge are the judging phase's settings; its model is a name under
	// trellis.yaml's models (or a spec such as "openai:gpt-4o-mini").
	Judge llm.SettingsSpec `json:"judge,omitzero"`
	// History is the nodes' and the judge's history policy.
	History *history.Spec `json:"history,omitempty"`
}

// NewAgent builds the agent over cfg (defaults applied).
func NewAgent(cfg Config) (*agentbuilder.Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("builder: Config.Model is nil; pass the llm.Model that drafts and reviews (builder.Script() for the scripted demo)")
	}
	if cfg.Tools == nil {
		cfg.Tools = []tool.Tool{PolicyTool()}
	}
	if cfg.AnswerPrompt == "" {
		cfg.AnswerPrompt = AnswerPrompt
	}
	if cfg.ReviewPrompt == "" {
		cfg.ReviewPrompt = ReviewPrompt
	}
	if cfg.Agent != nil {
		reg := map[string]tool.Tool{}
		for _, t := range cfg.Tools {
			reg[t.Info().Name] = t
		}
		return phases(agentbuilder.FromSpec(*cfg.Agent, reg), cfg).Build(cfg.Model)
	}
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = 8
	}
	names := make([]string, len(cfg.Tools))
	for i, t := range cfg.Tools {
		names[i] = t.Info().Name
	}
	data := PromptData{Tools: strings.Join(names, ", ")}
	answer, err := apps.Prompt("builder.answer", cfg.AnswerPrompt, data)
	if err != nil {
		return nil, fmt.Errorf("builder: Config.AnswerPrompt: %w", err)
	}
	review, err := apps.Prompt("builder.review", cfg.ReviewPrompt, data)
	if err != nil {
		return nil, fmt.Errorf("builder: Config.ReviewPrompt: %w", err)
	}
	cfg.AnswerPrompt, cfg.ReviewPrompt = answer, review
	return phases(agentbuilder.New("support-review"), cfg).
		Description("Drafts a reply to a customer and has it reviewed until the reviewer is satisfied.").
		MaxIterations(cfg.MaxIterations).
		LLMNode("answer", cfg.AnswerPrompt, cfg.Tools...).
		LLMNodeWith("review", react.Config{System: cfg.ReviewPrompt, Voice: Reviewer}).
		Describe("answer", "Drafts the reply, checking the policy first.").
		Describe("review", "Checks the draft for accuracy and tone.").
		Edge("answer", "review").
		When("review", Condition, "answer").
		Entry("answer").
		End("review").
		Build(cfg.Model)
}

// phases sets cfg's judge settings, history policy and middleware on b.
func phases(b *agentbuilder.Builder, cfg Config) *agentbuilder.Builder {
	if len(cfg.Middleware) > 0 {
		b.Middleware(cfg.Middleware...)
	}
	if !cfg.Judge.IsZero() {
		b.JudgeSettings(cfg.Judge)
	}
	if cfg.History != nil {
		b.History(cfg.History)
	}
	return b
}

// New builds the builder app.
func New(_ context.Context, cfg Config) (*apps.App, error) {
	a, err := NewAgent(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Request == "" {
		cfg.Request = Question
	}
	return &apps.App{
		Name:    Name,
		Summary: Summary,
		Graph:   a.Graph(),
		Input: func(request string) graph.Update {
			if request == "" {
				request = cfg.Request
			}
			return agentbuilder.Input(request)
		},
		Script:  Script,
		Events:  graph.EventTaskEnd,
		Print:   printTask,
		Outcome: func(_ context.Context, s graph.State) string { return outcome(s) },
		Close:   apps.Closer(),
	}, nil
}

// Entry describes the app to runners; Env.Settings is a Settings object.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: Script, Check: apps.CheckSettings[Settings],
		Start: apps.Start{Examples: []string{Question, "My charger arrived broken. Can I get a replacement?", "Do you ship to Norway?"}},
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			var st Settings
			if err := env.Decode(&st); err != nil {
				return nil, fmt.Errorf("builder: %w", err)
			}
			cfg := Config{Model: env.Model, AnswerPrompt: st.AnswerPrompt, ReviewPrompt: st.ReviewPrompt, MaxIterations: st.MaxIterations, Agent: st.Agent,
				Middleware: env.Middleware}
			var errs []error
			if st.Judge != (llm.SettingsSpec{}) {
				s, err := st.Judge.Settings("apps.builder.judge", env.Resolve)
				errs = append(errs, err)
				cfg.Judge = s
			}
			p, err := st.History.Build("apps.builder.history", env.Model, env.Resolve)
			errs = append(errs, err)
			cfg.History = p
			if err := errors.Join(errs...); err != nil {
				return nil, fmt.Errorf("builder: %w", err)
			}
			return New(ctx, cfg)
		}}
}

// Script returns the scripted model: a first draft that forgets the free
// return label, a review asking for it, a corrected draft and an approving
// review, with the judge's verdicts. Each reply is chosen by what the
// request holds (which node asks, how many policy lookups came back,
// what the review said), never by how many requests came before, so any
// number of threads get the same replies.
func Script() llm.Model {
	m := llmtest.New()
	answer, review := inNode("answer"), inNode("review")
	after := llmtest.LastIsToolResult()
	// A question outside the scenario: say what the demo can show.
	m.When(llmtest.And(answer, toolResults(0), func(r *llmtest.Request) bool { return !returnsQuestion.MatchString(r.LastUser()) }),
		llmtest.Text(Scope)).Repeat()
	m.When(llmtest.And(review, toolResults(0)), llmtest.Text("It says plainly what the demo can answer. No changes needed.")).Repeat()
	m.When(llmtest.And(answer, toolResults(0)), llmtest.ToolCalls(llmtest.Call("lookup_policy", `{"topic":"returns"}`))).Repeat()
	m.When(llmtest.And(answer, toolResults(1), after),
		llmtest.Text("Yes: faulty items can be returned within 30 days, so you are in time. Reply with your order number and we will start the return.")).Repeat()
	m.When(llmtest.And(answer, toolResults(1)), llmtest.ToolCalls(llmtest.Call("lookup_policy", `{"topic":"shipping"}`))).Repeat()
	m.When(llmtest.And(answer, toolResults(2), after),
		llmtest.Text("Yes: faulty items can be returned within 30 days, so you are in time. We will email you a free prepaid return label; reply with your order number to start.")).Repeat()
	m.When(llmtest.And(review, toolResults(1)),
		llmtest.Text("Accurate, but it should say that return shipping is free for faulty items. Please add that.")).Repeat()
	m.When(llmtest.And(review, toolResults(2)), llmtest.Text("Accurate and kind. No changes needed.")).Repeat()
	judge := llmtest.LastUserContains(Condition)
	m.When(llmtest.And(judge, llmtest.LastUserContains("No changes needed")),
		llmtest.JSON(map[string]any{"holds": false, "reason": "the review approves the reply"})).Repeat()
	m.When(judge, llmtest.JSON(map[string]any{"holds": true, "reason": "the review asks to mention free return shipping"})).Repeat()
	return m
}

// Scope is the scripted model's reply to a question outside its
// scenario.
const Scope = "I am the support builder's scripted demo model, so I can answer only one kind of question: " +
	"returning a faulty item (I look up the returns and shipping policies, a reviewer checks my reply, and I fix it). " +
	"I cannot answer other questions; a real model can (--model, or OPENAI_API_KEY). Try: \"" + Question + "\""

// returnsQuestion matches the questions of the scenario: returns of
// faulty or broken items (an empty one is the sample question).
var returnsQuestion = regexp.MustCompile(`(?i)^\s*$|return|refund|faulty|broken|defect|stopped working|replace`)

// inNode matches requests from inside LLM node name, also when the agent
// runs nested in another graph (a sub-agent: "helper:…|answer:…").
func inNode(name string) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		ns := r.Namespace
		if i := strings.LastIndexByte(ns, '|'); i >= 0 {
			ns = ns[i+1:]
		}
		return strings.HasPrefix(ns, name+":")
	}
}

// toolResults matches a request holding n tool results.
func toolResults(n int) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		c := 0
		for _, m := range r.Messages {
			if m.Role == llm.RoleTool {
				c++
			}
		}
		return c == n
	}
}

func printTask(w io.Writer, ev graph.Event) {
	if ev.Kind == graph.EventTaskEnd && ev.Namespace == "" && !strings.HasSuffix(ev.Node, "/route") {
		fmt.Fprintf(w, "- %s finished (%s)\n", ev.Node, ev.Task.Duration.Round(1e6))
	}
}

func outcome(s graph.State) string {
	var b strings.Builder
	for _, j := range agentbuilder.Judgements.Get(s) {
		fmt.Fprintf(&b, "judge after %s: %q holds = %v (%s)\n", j.Node, j.Condition, j.Holds, j.Reason)
	}
	b.WriteString("conversation:\n")
	for _, m := range react.Messages.Get(s) {
		if t := m.Text(); t != "" && m.Role != llm.RoleTool {
			fmt.Fprintf(&b, "  %s: %s\n", m.Role, t)
		}
	}
	return b.String()
}
