package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/trellis-agents/trellis/graph"
)

// AuthKind is the Kind of every AuthRequest, so code reading a run's
// interrupts can tell a request for credentials from other questions.
// The A2A wire shows a task waiting on one as auth-required.
const AuthKind = "auth_required"

// AuthRequest is the payload of the interrupt RequireAuth raises: a tool
// needs credentials the run does not have.
type AuthRequest struct {
	// Kind is AuthKind.
	Kind string `json:"kind"`
	// Tool names the tool that needs them.
	Tool string `json:"tool"`
	// Message says, for a person, what is needed and how to give it
	// ("Sign in to the calendar at URL, then answer done").
	Message string `json:"message"`
	// Scheme is the kind of credential: "bearer", "api_key", "oauth2"...
	// (free text; "" when it does not matter).
	Scheme string `json:"scheme,omitempty"`
	// URL, when set, is where to authenticate.
	URL string `json:"url,omitempty"`
}

// RequireAuth stops the run until the credentials a tool needs are given:
// it raises an interrupt whose payload is req (Kind set to AuthKind), and
// returns the answer on resume — the credentials themselves, or only word
// that they were stored out of band (an OAuth sign-in), as the tool's
// Message asks. Call it from a tool's Call and return its error as is when
// it has one: the tool node passes the interrupt on, and the call runs
// again, with the answer, when the thread is resumed.
//
// An answer is kept in the thread's checkpoints like every resume value:
// ask for a sign-in done elsewhere rather than for a secret when the
// thread's history must not hold it.
func RequireAuth(ctx context.Context, req AuthRequest) (json.RawMessage, error) {
	if strings.TrimSpace(req.Message) == "" {
		return nil, errors.New("tool: RequireAuth needs a Message saying what credentials are needed")
	}
	req.Kind = AuthKind
	return graph.Interrupt[json.RawMessage](ctx, req)
}
