package tool

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/graph"
)

// Record is what the tool node keeps about one finished call, in the
// records key (see NodeConfig.Records), keyed by call ID. Calls still
// waiting for approval have no record yet.
type Record struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Arguments are the arguments the model wrote, as text (they may not
	// be valid JSON).
	Arguments string `json:"arguments"`
	// EditedArguments are the arguments a person substituted, when the
	// approval outcome is OutcomeEdited; the call ran with them.
	EditedArguments string `json:"edited_arguments,omitempty"`
	// Result is the full text the model received (before any cutting by
	// ForModel): the tool's result, or the error message.
	Result string `json:"result"`
	// Error says what went wrong, empty when the call succeeded.
	Error    string  `json:"error,omitempty"`
	Approval Outcome `json:"approval"`
	// Duration is how long the tool ran (zero when it did not run).
	Duration time.Duration `json:"duration"`
	// Step, Node and TaskID locate the call in the run.
	Step   int    `json:"step"`
	Node   string `json:"node"`
	TaskID string `json:"task_id"`
}

// NewRecordsKey declares a state key for call records (NodeConfig.Records).
// Its reducer merges maps, so parallel calls each add their own entry.
func NewRecordsKey(name string) *graph.Key[map[string]Record] {
	return graph.NewKey(name, graph.MergeMap[string, Record]())
}

// LookupCall returns the record of the call with this ID in s.
func LookupCall(s graph.State, records *graph.Key[map[string]Record], callID string) (Record, bool) {
	r, ok := records.Get(s)[callID]
	return r, ok
}

type stateKey struct{}

// WithState returns a context carrying s, which tools read with StateFrom.
// The tool node does this for every call; use it to call a tool from a node
// of your own or from a test.
func WithState(ctx context.Context, s graph.State) context.Context {
	return context.WithValue(ctx, stateKey{}, s)
}

// StateFrom returns the graph state snapshot the running call's step
// started from, and false outside a tool call. Tools read keys with
// Key.Get; they change state only through their results. The run's store is
// graph.StoreFrom(ctx).
func StateFrom(ctx context.Context) (graph.State, bool) {
	s, ok := ctx.Value(stateKey{}).(graph.State)
	return s, ok
}

type callIDKey struct{}

func withCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallID returns the ID of the call being run, as the model gave it, and
// false outside the tool node. A write tool with side effects outside the
// run can key them on it to apply each call exactly once: a call whose
// effect was committed but whose result the run had not yet saved (a crash
// in between) runs again on resume, with the same ID.
func CallID(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(callIDKey{}).(string)
	return id, ok && id != ""
}
