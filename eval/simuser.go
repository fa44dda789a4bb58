package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

// DefaultUserTurns is a simulated user's MaxTurns when the case sets none.
const DefaultUserTurns = 8

// UserResolver returns the model a simulated user names (SimulatedUser's
// Model; "" is the operator's default model). Like judges, simulated users
// only use models the operator declared.
type UserResolver func(ctx context.Context, name string) (llm.Model, error)

// SimulatedTurn is one reply of a simulated user, recorded in the trial's
// result in the order they were given.
type SimulatedTurn struct {
	// Kind is "message" (a further user message), "answer" (an answer to
	// the agent's question or form) or "done" (the user ended the
	// conversation).
	Kind string `json:"kind"`
	// Question is what the agent asked, for an answer.
	Question string `json:"question,omitempty"`
	// InterruptKind is the interrupt's kind, for an answer.
	InterruptKind string `json:"interrupt_kind,omitempty"`
	// Text is the message, or why the user ended.
	Text string `json:"text,omitempty"`
	// Value is the answer sent.
	Value json.RawMessage `json:"value,omitempty"`
}

// check reports what makes a simulated user unusable.
func (u *SimulatedUser) check(caseID string, turns int) error {
	switch {
	case strings.TrimSpace(u.Goal) == "":
		return fmt.Errorf("case %q: the simulated user has no \"goal\" (it ends the conversation when the goal is met)", caseID)
	case u.MaxTurns < 0:
		return fmt.Errorf("case %q: the simulated user's max_turns is %d; give a positive number, or none for %d", caseID, u.MaxTurns, DefaultUserTurns)
	case turns > 0:
		return fmt.Errorf("case %q: a case with a simulated user has no fixed \"turns\" (the user says what comes next)", caseID)
	}
	return nil
}

// userReply is what the simulated user's model must answer with.
type userReply struct {
	Message string          `json:"message"`
	Answer  json.RawMessage `json:"answer"`
	Done    bool            `json:"done"`
	Reason  string          `json:"reason"`
}

// userSchema is the JSON Schema of userReply, asked of the model.
var userSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"message":{"type":"string","description":"what you say next to the agent"},` +
	`"answer":{"description":"your answer to the agent's question or form: its value as the form asks (a string for a choice, an object for a form)"},` +
	`"done":{"type":"boolean","description":"true when your goal is met, or cannot be"},` +
	`"reason":{"type":"string","description":"why you are done"}},"additionalProperties":false}`)

// simUser plays a case's simulated user against one trial.
type simUser struct {
	spec  *SimulatedUser
	model llm.Model
	turns int // replies given so far
	log   []SimulatedTurn
}

func (u *simUser) max() int {
	if u.spec.MaxTurns > 0 {
		return u.spec.MaxTurns
	}
	return DefaultUserTurns
}

// system is the user model's instructions.
func (u *simUser) system() string {
	return "You play a user talking to an AI agent, to test it. Stay in character and never say you are simulated.\n" +
		"Persona: " + u.spec.Persona + "\nGoal: " + u.spec.Goal + "\n" +
		`Reply with one JSON object only: {"message": "..."} to say something to the agent; ` +
		`{"answer": <value>} when the agent asks you a question or gives you a form (the value in the shape it asks for: a string for a choice or a yes/no, an object of the form's fields); ` +
		`{"done": true, "reason": "..."} when your goal is met or cannot be met.`
}

// ask sends the conversation so far and what happens now, and decodes the
// reply; each call is one of the user's turns.
func (u *simUser) ask(ctx context.Context, convo []llm.Message, now string) (userReply, error) {
	if u.turns >= u.max() {
		return userReply{}, fmt.Errorf("the simulated user reached its limit of %d turns before its goal was met", u.max())
	}
	u.turns++
	var b strings.Builder
	b.WriteString("The conversation so far:\n")
	if len(convo) == 0 {
		b.WriteString("(nothing yet)\n")
	}
	for _, m := range convo {
		switch {
		case m.Role == llm.RoleUser:
			fmt.Fprintf(&b, "You: %s\n", m.Text())
		case m.Role == llm.RoleAssistant && m.Text() != "":
			fmt.Fprintf(&b, "Agent: %s\n", m.Text())
		}
	}
	b.WriteString("\nNow: " + now)
	req := &llm.Request{
		Messages:       []llm.Message{llm.System(u.system()), llm.User(b.String())},
		ResponseFormat: &llm.ResponseFormat{Name: "simulated_user", Schema: userSchema},
	}
	resp, err := u.model.Generate(ctx, req)
	if err != nil {
		return userReply{}, fmt.Errorf("the simulated user's model: %w", err)
	}
	var r userReply
	text := strings.TrimSpace(resp.Message.Text())
	text = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(text, "```json"), "```"), "```")
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &r); err != nil {
		return userReply{}, fmt.Errorf("the simulated user did not answer with a JSON object (%v): %.200q", err, resp.Message.Text())
	}
	return r, nil
}

// answer answers an interrupt in character.
func (u *simUser) answer(ctx context.Context, convo []llm.Message, in Interrupt) (json.RawMessage, error) {
	what := in.Question
	if len(in.Payload) > 0 {
		what = string(in.Payload)
	}
	r, err := u.ask(ctx, convo, "the agent stopped to ask you this (its question or form, as JSON): "+what+"\nGive your answer.")
	if err != nil {
		return nil, err
	}
	if len(r.Answer) == 0 || bytes.Equal(r.Answer, []byte("null")) {
		if r.Message == "" {
			return nil, fmt.Errorf("the simulated user gave no answer to %s", describe(in))
		}
		r.Answer, _ = json.Marshal(r.Message) // an answer in words
	}
	u.log = append(u.log, SimulatedTurn{Kind: "answer", Question: in.Question, InterruptKind: in.Kind, Value: r.Answer})
	return r.Answer, nil
}

// next asks what the user says after the agent finished a turn: a message
// to send, or "" when the user is done.
func (u *simUser) next(ctx context.Context, convo []llm.Message) (string, error) {
	now := "the agent finished its turn. Say what you say next, or say you are done if your goal is met."
	if len(convo) == 0 {
		now = "start the conversation: say your first message to the agent."
	}
	r, err := u.ask(ctx, convo, now)
	if err != nil {
		return "", err
	}
	switch {
	case r.Done:
		u.log = append(u.log, SimulatedTurn{Kind: "done", Text: r.Reason})
		return "", nil
	case strings.TrimSpace(r.Message) == "":
		return "", errors.New(`the simulated user neither said something nor said it was done; its reply needs "message" or "done"`)
	}
	u.log = append(u.log, SimulatedTurn{Kind: "message", Text: r.Message})
	return r.Message, nil
}

// driveSimulated runs a case whose user is simulated: the input's message
// (or the user's first one when the input has none) starts the run; the
// case's answers answer what they match and the user the rest; when a run
// ends, the user says something more or ends, within its turn limit.
func (r *Runner) driveSimulated(ctx context.Context, c *Case, id string, md map[string]string, run *trialRun) error {
	if r.Users == nil {
		return errors.New("this case has a simulated user but the runner has no Runner.Users to resolve its model")
	}
	m, err := r.Users(ctx, c.User.Model)
	if err != nil {
		return fmt.Errorf("the simulated user's model %q: %w", c.User.Model, err)
	}
	u := &simUser{spec: c.User, model: m}
	defer func() { run.simulated = u.log }()
	convo := func() []llm.Message {
		th, err := r.Target.Thread(ctx, id)
		if err != nil {
			return nil
		}
		return th.Messages
	}
	in := c.Input
	if in.Message == "" && len(in.State) == 0 {
		msg, err := u.next(ctx, nil)
		if err != nil {
			return err
		}
		if msg == "" {
			return errors.New("the simulated user ended before saying anything")
		}
		in.Message = msg
	}
	ans, err := newAnswerer(c.Answers)
	if err != nil {
		return err
	}
	fallback := func(in Interrupt) (json.RawMessage, error) { return u.answer(ctx, convo(), in) }
	req := RunRequest{ThreadID: id, Input: in, Metadata: md}
	for {
		if err := r.run(ctx, req, ans, fallback, run); err != nil {
			return err
		}
		msg, err := u.next(ctx, convo())
		if err != nil || msg == "" {
			return err
		}
		req = RunRequest{ThreadID: id, Input: Input{Message: msg, Context: c.Input.Context, Config: c.Input.Config}, Metadata: md}
	}
}
