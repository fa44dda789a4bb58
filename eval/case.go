package eval

import "encoding/json"

// Dataset is a named, versioned list of cases. Criteria apply to every case
// that does not name its own.
type Dataset struct {
	// Name identifies the dataset (for example "planner-core").
	Name string `json:"name"`
	// Version is the dataset's version; a changed case is a new version.
	Version string `json:"version,omitempty"`
	// Description says what the dataset checks.
	Description string `json:"description,omitempty"`
	// Criteria are the default criteria of its cases.
	Criteria []Criterion `json:"criteria,omitempty"`
	// Cases are the cases, in their order.
	Cases []Case `json:"cases"`
	// Metadata is free-form data kept with the dataset (eval/adk keeps an
	// imported set's own fields here, to export them again).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Case is one thing an agent should do right: an input, the answers to the
// questions the run will ask, further user turns, and what is expected.
type Case struct {
	// ID is unique within its dataset and stable across versions, so
	// experiments compare the same case.
	ID string `json:"id"`
	// Tags group cases in reports and select them (--tag).
	Tags []string `json:"tags,omitempty"`
	// Input starts the run.
	Input Input `json:"input"`
	// Answers answer the interrupts the run meets, matched by Answer's rules.
	Answers []Answer `json:"answers,omitempty"`
	// Turns are further user messages, each sent after the run before it
	// finished (every interrupt answered).
	Turns []Turn `json:"turns,omitempty"`
	// User, when set, is a simulated user that answers the agent's questions
	// and forms instead of Answers and Turns, until its goal is met or
	// MaxTurns is reached.
	User *SimulatedUser `json:"user,omitempty"`
	// Expect holds the references evaluators compare against.
	Expect Expectations `json:"expect,omitzero"`
	// Criteria, when set, replace the dataset's criteria for this case.
	Criteria []Criterion `json:"criteria,omitempty"`
	// Metadata is free-form data kept with the case and its results.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Input is what starts a run: a first user message for a chat assistant, or
// a state input for one whose input is not a chat. Exactly one of Message
// and State is set.
type Input struct {
	// Message is the first user message.
	Message string `json:"message,omitempty"`
	// State is a state input (a JSON object of the graph's input keys).
	State json.RawMessage `json:"state,omitempty"`
	// Context is the run context (LangGraph's "context").
	Context map[string]any `json:"context,omitempty"`
	// Config is the run's configurable values.
	Config map[string]any `json:"config,omitempty"`
}

// Answer answers an interrupt. An answer with no matching rule (Kind,
// Question and Node empty) answers the next unanswered interrupt in order;
// otherwise it answers every interrupt it matches, once per match unless
// Repeat is set. Answers are tried in their order; an interrupt no answer
// matches ends the case as failed ("unanswered question"), unless the case
// has a simulated user.
type Answer struct {
	// Kind matches the interrupt payload's "kind" field exactly.
	Kind string `json:"kind,omitempty"`
	// Question is a regular expression matched against the interrupt's
	// question text.
	Question string `json:"question,omitempty"`
	// Node matches the node that asked.
	Node string `json:"node,omitempty"`
	// Repeat lets the answer answer every matching interrupt, not just the
	// first.
	Repeat bool `json:"repeat,omitempty"`
	// Value is the resume value, in the plain forms every wire accepts (a
	// string for a choice or confirmation, an object for forms, plan reviews
	// and approval decisions).
	Value json.RawMessage `json:"value"`
}

// Turn is a further user message, with the answers to the interrupts it
// leads to.
type Turn struct {
	// Message is the user's text.
	Message string `json:"message"`
	// Answers answer the interrupts this turn meets.
	Answers []Answer `json:"answers,omitempty"`
}

// SimulatedUser is a model that plays the user: it reads the agent's
// messages and questions and answers them in character until Goal is met.
type SimulatedUser struct {
	// Model names one of the operator's declared models.
	Model string `json:"model"`
	// Persona says who the user is.
	Persona string `json:"persona"`
	// Goal says what the user wants; the simulated user ends the
	// conversation when it judges the goal met.
	Goal string `json:"goal"`
	// MaxTurns bounds the conversation (default 8).
	MaxTurns int `json:"max_turns,omitempty"`
}

// Expectations are the references of a case. Each evaluator reads the
// fields it needs and explains, rather than passes, when one it needs is
// missing.
type Expectations struct {
	// Output is the expected final answer (the last assistant message's
	// text) or, for a non-chat graph, the expected final state as JSON.
	Output json.RawMessage `json:"output,omitempty"`
	// ToolCalls is the expected tool trajectory of the agent itself.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Nodes is the expected node path.
	Nodes []string `json:"nodes,omitempty"`
	// Rubric tells an LLM judge what a good answer does.
	Rubric string `json:"rubric,omitempty"`
	// Turns are per-turn references for multi-turn cases (ADK's
	// invocations), in order: the first is the input's turn.
	Turns []TurnExpectation `json:"turns,omitempty"`
}

// TurnExpectation is the reference for one user turn.
type TurnExpectation struct {
	// Response is the expected final response of the turn.
	Response string `json:"response,omitempty"`
	// ToolCalls is the expected trajectory of the turn.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Criterion chooses an evaluator for a case and the score it must reach.
type Criterion struct {
	// Evaluator is a registered evaluator's name (see Register).
	Evaluator string `json:"evaluator"`
	// Threshold is the score a case must reach to pass (default 1).
	Threshold *float64 `json:"threshold,omitempty"`
	// Params configure the evaluator (each documents its own).
	Params json.RawMessage `json:"params,omitempty"`
}
