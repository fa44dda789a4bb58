// Package spec is the route table of the LangGraph-compatible API and the
// OpenAPI 3.1 document generated from it. The server registers its
// handlers from the same table (one handler per OperationID), so the mux
// and the document cannot disagree, and the document's schemas come from
// the Go types in server/api/wire that the handlers decode and encode.
package spec

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/server/a2aapi"
	"github.com/trellis-agents/trellis/server/aguiapi"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/internal/transcript"
	"github.com/trellis-agents/trellis/server/openaiapi"
)

// Route is one operation of the API.
type Route struct {
	// Method is the HTTP method ("GET", "POST", ...).
	Method string
	// Pattern is the path in net/http pattern syntax: "/threads/{thread_id}".
	Pattern string
	// OperationID names the operation; the server maps it to its handler.
	OperationID string
	// Tag groups operations in the document (Assistants, Threads, ...).
	Tag string
	// Summary is the one-line description.
	Summary string
	// Description adds what a caller must know (headers, odd statuses).
	Description string
	// Body is the request body's type (nil: none), decoded by wire.Decode.
	Body reflect.Type
	// BodyLimit is the body size limit in bytes (0: wire.DefaultBodyLimit).
	BodyLimit int64
	// Query is the query's type (nil: none), decoded by wire.DecodeQuery.
	Query reflect.Type
	// Status is the success status.
	Status int
	// Response is the success body's type (nil: no body).
	Response reflect.Type
	// Stream is set when the success body is a text/event-stream.
	Stream bool
	// MayStream is set when some requests are answered with a
	// text/event-stream and others with Response (a chat completion with
	// "stream": true, an MCP answer sent as SSE). Both kinds count against
	// limits.max_streams when they stream; a test opens each.
	MayStream bool
	// NoContent lists other success statuses, answered without a body
	// (204 for PATCH /threads/{id} with "Prefer: return=minimal").
	NoContent []int
	// Headers are response headers the success answer sets, by name, with
	// what they carry.
	Headers map[string]string
	// Problems are the error statuses beyond the ones every route of its
	// kind has (see Problems).
	Problems []int
	// MediaType is the media type of the request body and the success
	// answer when it is not JSON (application/x-ndjson for the datasets'
	// JSONL import and export); Body and Response are then string.
	MediaType string
	// Errors is the body of error answers when it is not a Problem
	// (application/problem+json): the OpenAI wire answers errors in
	// OpenAI's shape, as application/json.
	Errors reflect.Type
}

// MuxPattern is the pattern for http.ServeMux.Handle: "POST /threads".
func (r Route) MuxPattern() string { return r.Method + " " + r.Pattern }

// PathParams lists the wildcards of Pattern, in order.
func (r Route) PathParams() []string {
	var out []string
	for _, seg := range strings.Split(r.Pattern, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.TrimSuffix(strings.Trim(seg, "{}"), "..."))
		}
	}
	return out
}

// publicOperations are served without an API key when auth is on.
var publicOperations = map[string]bool{"ok": true, "info": true, "openapi": true}

// Public reports whether the route is served without an API key when auth
// is on: the health check, the version and this document, as LangGraph's
// server does.
func (r Route) Public() bool { return publicOperations[r.OperationID] }

// AllProblems is every error status the route may answer: 400, 408, 413,
// 415 and 422 with a body; 422 with a query; 404 with path parameters;
// 401 and 429 unless it is public; the route's own; and 500.
func (r Route) AllProblems() []int {
	set := map[int]bool{http.StatusInternalServerError: true}
	if r.Body != nil {
		for _, s := range []int{400, 408, 413, 415, 422} {
			set[s] = true
		}
	}
	if !r.Public() {
		set[http.StatusUnauthorized] = true
		set[http.StatusTooManyRequests] = true
	}
	if r.Query != nil {
		set[422] = true
	}
	if len(r.PathParams()) > 0 {
		set[404] = true
	}
	for _, s := range r.Problems {
		set[s] = true
	}
	var out []int
	for s := range 600 {
		if set[s] {
			out = append(out, s)
		}
	}
	return out
}

func t[T any]() reflect.Type { return reflect.TypeFor[T]() }

// Headers of run creations (the SDK reads Content-Location for the run's
// ID and reconnects to Location).
var runHeaders = map[string]string{
	"Location":         "the run's stream (GET), to rejoin it",
	"Content-Location": "the run: /threads/{thread_id}/runs/{run_id}",
}

// runVersionNote describes the run body's Trellis extension.
const runVersionNote = "assistant_version (a Trellis extension) names the assistant version to run: its graph, config and context, whatever version is the latest. Left out, the run keeps the version of the thread's latest run of the same assistant, else runs the latest. A version the assistant does not have is a 422 at /assistant_version."

// Routes returns the LangGraph-compatible API, in document order. Crons
// and the v2 thread protocol (/threads/{id}/commands, .../stream/events)
// are not part of it: those SDK calls get a 404.
func Routes() []Route {
	rc := t[wire.RunCreate]()
	ok, nc := http.StatusOK, http.StatusNoContent
	rs := []Route{
		// Assistants.
		{Method: "POST", Pattern: "/assistants", OperationID: "createAssistant", Tag: "Assistants", Summary: "Create an assistant", Body: t[wire.AssistantCreate](), Status: ok, Response: t[wire.Assistant](), Problems: []int{409}},
		{Method: "POST", Pattern: "/assistants/search", OperationID: "searchAssistants", Tag: "Assistants", Summary: "Search assistants", Body: t[wire.AssistantSearch](), Status: ok, Response: t[[]wire.Assistant](), Headers: map[string]string{"X-Pagination-Next": "the offset of the next page, when there is one"}},
		{Method: "POST", Pattern: "/assistants/count", OperationID: "countAssistants", Tag: "Assistants", Summary: "Count assistants", Body: t[wire.AssistantCount](), Status: ok, Response: t[int]()},
		{Method: "GET", Pattern: "/assistants/{assistant_id}", OperationID: "getAssistant", Tag: "Assistants", Summary: "Get an assistant (its latest version)", Status: ok, Response: t[wire.Assistant]()},
		{Method: "PATCH", Pattern: "/assistants/{assistant_id}", OperationID: "patchAssistant", Tag: "Assistants", Summary: "Update an assistant, making a new version", Body: t[wire.AssistantPatch](), Status: ok, Response: t[wire.Assistant]()},
		{Method: "DELETE", Pattern: "/assistants/{assistant_id}", OperationID: "deleteAssistant", Tag: "Assistants", Summary: "Delete an assistant", Query: t[wire.AssistantDeleteQuery](), Status: nc},
		{Method: "POST", Pattern: "/assistants/{assistant_id}/versions", OperationID: "listAssistantVersions", Tag: "Assistants", Summary: "List an assistant's versions", Body: t[wire.AssistantVersionsSearch](), Status: ok, Response: t[[]wire.AssistantVersion]()},
		{Method: "POST", Pattern: "/assistants/{assistant_id}/latest", OperationID: "setLatestAssistantVersion", Tag: "Assistants", Summary: "Make a version the latest", Body: t[wire.AssistantSetLatest](), Status: ok, Response: t[wire.Assistant]()},
		{Method: "GET", Pattern: "/assistants/{assistant_id}/graph", OperationID: "getAssistantGraph", Tag: "Assistants", Summary: "Get the assistant's graph (nodes and edges)", Query: t[wire.AssistantGraphQuery](), Status: ok, Response: t[wire.AssistantGraph]()},
		{Method: "GET", Pattern: "/assistants/{assistant_id}/schemas", OperationID: "getAssistantSchemas", Tag: "Assistants", Summary: "Get the JSON Schemas of the graph's input, output, state, config and context", Status: ok, Response: t[wire.GraphSchema]()},
		{Method: "GET", Pattern: "/assistants/{assistant_id}/subgraphs", OperationID: "getAssistantSubgraphs", Tag: "Assistants", Summary: "Get the schemas of the graph's subgraphs", Query: t[wire.AssistantSubgraphsQuery](), Status: ok, Response: t[wire.Subgraphs]()},
		{Method: "GET", Pattern: "/assistants/{assistant_id}/subgraphs/{namespace}", OperationID: "getAssistantSubgraphsAt", Tag: "Assistants", Summary: "Get the schemas of the subgraphs under a namespace", Query: t[wire.AssistantSubgraphsQuery](), Status: ok, Response: t[wire.Subgraphs]()},

		// Threads.
		{Method: "POST", Pattern: "/threads", OperationID: "createThread", Tag: "Threads", Summary: "Create a thread", Body: t[wire.ThreadCreate](), Status: ok, Response: t[wire.Thread](), Problems: []int{409}},
		{Method: "POST", Pattern: "/threads/search", OperationID: "searchThreads", Tag: "Threads", Summary: "Search threads", Body: t[wire.ThreadSearch](), Status: ok, Response: t[[]wire.Thread]()},
		{Method: "POST", Pattern: "/threads/count", OperationID: "countThreads", Tag: "Threads", Summary: "Count threads", Body: t[wire.ThreadCount](), Status: ok, Response: t[int]()},
		{Method: "POST", Pattern: "/threads/prune", OperationID: "pruneThreads", Tag: "Threads", Summary: "Delete threads, or keep only their latest checkpoint", Body: t[wire.ThreadPrune](), Status: ok, Response: t[wire.ThreadPruneResult]()},
		{Method: "GET", Pattern: "/threads/{thread_id}", OperationID: "getThread", Tag: "Threads", Summary: "Get a thread", Query: t[wire.ThreadGetQuery](), Status: ok, Response: t[wire.Thread]()},
		{Method: "PATCH", Pattern: "/threads/{thread_id}", OperationID: "patchThread", Tag: "Threads", Summary: "Update a thread's metadata or TTL", Description: `With "Prefer: return=minimal" the answer is 204 without a body.`, Body: t[wire.ThreadPatch](), Status: ok, Response: t[wire.Thread](), NoContent: []int{nc}},
		{Method: "DELETE", Pattern: "/threads/{thread_id}", OperationID: "deleteThread", Tag: "Threads", Summary: "Delete a thread, its runs and checkpoints", Status: nc, Problems: []int{409}},
		{Method: "POST", Pattern: "/threads/{thread_id}/copy", OperationID: "copyThread", Tag: "Threads", Summary: "Copy a thread with its checkpoints", Status: ok, Response: t[wire.Thread]()},
		{Method: "GET", Pattern: "/threads/{thread_id}/state", OperationID: "getThreadState", Tag: "Threads", Summary: "Get the thread's current state", Query: t[wire.ThreadStateQuery](), Status: ok, Response: t[wire.ThreadState]()},
		{Method: "POST", Pattern: "/threads/{thread_id}/state", OperationID: "updateThreadState", Tag: "Threads", Summary: "Update the state as a node", Body: t[wire.ThreadStateUpdate](), Status: ok, Response: t[wire.ThreadStateUpdateResult](), Problems: []int{409}},
		{Method: "PATCH", Pattern: "/threads/{thread_id}/state", OperationID: "patchThreadState", Tag: "Threads", Summary: "Merge metadata into the latest (or a named) checkpoint's", Body: t[wire.ThreadStatePatch](), Status: nc, Problems: []int{404, 409}},
		{Method: "GET", Pattern: "/threads/{thread_id}/state/{checkpoint_id}", OperationID: "getThreadStateAt", Tag: "Threads", Summary: "Get the state at a checkpoint", Query: t[wire.ThreadStateQuery](), Status: ok, Response: t[wire.ThreadState]()},
		{Method: "POST", Pattern: "/threads/{thread_id}/state/checkpoint", OperationID: "getThreadStateAtCheckpoint", Tag: "Threads", Summary: "Get the state at a checkpoint given as an object", Body: t[wire.ThreadStateAt](), Status: ok, Response: t[wire.ThreadState]()},
		{Method: "POST", Pattern: "/threads/{thread_id}/history", OperationID: "getThreadHistory", Tag: "Threads", Summary: "List past states, newest first", Body: t[wire.ThreadHistory](), Status: ok, Response: t[[]wire.ThreadState]()},
		{Method: "GET", Pattern: "/threads/{thread_id}/transcript", OperationID: "getThreadTranscript", Tag: "Threads", Summary: "The thread's messages, the person's answers and what its runs did, in order (Trellis extension)",
			Description: "Built from the thread's runs (their requests and event logs), its checkpoints (the current branch) and its state; see docs/api.md.", Status: ok, Response: t[[]transcript.Turn]()},
		{Method: "GET", Pattern: "/threads/{thread_id}/stream", OperationID: "joinThreadStream", Tag: "Threads", Summary: "Stream the events of every run on the thread", Description: "Last-Event-ID resumes after that event.", Query: t[wire.ThreadJoinStreamQuery](), Status: ok, Stream: true},

		// Runs on a thread.
		{Method: "POST", Pattern: "/threads/{thread_id}/runs", OperationID: "createRun", Tag: "Thread Runs", Summary: "Create a run in the background", Description: runVersionNote, Body: rc, Status: ok, Response: t[wire.Run](), Headers: runHeaders, Problems: []int{409}},
		{Method: "POST", Pattern: "/threads/{thread_id}/runs/stream", OperationID: "streamRun", Tag: "Thread Runs", Summary: "Create a run and stream its events", Description: runVersionNote, Body: rc, Query: t[wire.RunStreamQuery](), Status: ok, Stream: true, Headers: runHeaders, Problems: []int{409}},
		{Method: "POST", Pattern: "/threads/{thread_id}/runs/wait", OperationID: "waitRun", Tag: "Thread Runs", Summary: "Create a run and answer its final state values", Description: runVersionNote, Body: rc, Status: ok, Response: t[wire.RunResult](), Headers: runHeaders, Problems: []int{409}},
		{Method: "GET", Pattern: "/threads/{thread_id}/runs", OperationID: "listRuns", Tag: "Thread Runs", Summary: "List the thread's runs, newest first", Query: t[wire.RunListQuery](), Status: ok, Response: t[[]wire.Run]()},
		{Method: "GET", Pattern: "/threads/{thread_id}/runs/{run_id}", OperationID: "getRun", Tag: "Thread Runs", Summary: "Get a run", Status: ok, Response: t[wire.Run]()},
		{Method: "DELETE", Pattern: "/threads/{thread_id}/runs/{run_id}", OperationID: "deleteRun", Tag: "Thread Runs", Summary: "Delete a finished run", Status: nc, Problems: []int{409}},
		{Method: "POST", Pattern: "/threads/{thread_id}/runs/{run_id}/cancel", OperationID: "cancelRun", Tag: "Thread Runs", Summary: "Cancel a run", Query: t[wire.RunCancelQuery](), Status: http.StatusAccepted, Problems: []int{409}},
		{Method: "GET", Pattern: "/threads/{thread_id}/runs/{run_id}/join", OperationID: "joinRun", Tag: "Thread Runs", Summary: "Wait for a run and answer the thread's final state values", Query: t[wire.RunJoinQuery](), Status: ok, Response: t[wire.RunResult]()},
		{Method: "GET", Pattern: "/threads/{thread_id}/runs/{run_id}/stream", OperationID: "joinRunStream", Tag: "Thread Runs", Summary: "Stream a run's events (rejoin)", Description: `Last-Event-ID resumes after that event; "-1" replays the whole run.`, Query: t[wire.RunJoinStreamQuery](), Status: ok, Stream: true},

		// Stateless runs.
		{Method: "POST", Pattern: "/runs", OperationID: "createStatelessRun", Tag: "Stateless Runs", Summary: "Create a run on a temporary thread", Body: rc, Status: ok, Response: t[wire.Run](), Headers: runHeaders},
		{Method: "POST", Pattern: "/runs/stream", OperationID: "streamStatelessRun", Tag: "Stateless Runs", Summary: "Create a run on a temporary thread and stream it", Body: rc, Query: t[wire.RunStreamQuery](), Status: ok, Stream: true, Headers: runHeaders},
		{Method: "POST", Pattern: "/runs/wait", OperationID: "waitStatelessRun", Tag: "Stateless Runs", Summary: "Create a run on a temporary thread and answer its final values", Body: rc, Status: ok, Response: t[wire.RunResult](), Headers: runHeaders},
		{Method: "POST", Pattern: "/runs/batch", OperationID: "createRunBatch", Tag: "Stateless Runs", Summary: "Create several runs on temporary threads", Body: t[wire.RunBatch](), Status: ok, Response: t[[]wire.Run]()},
		{Method: "POST", Pattern: "/runs/cancel", OperationID: "cancelRuns", Tag: "Stateless Runs", Summary: "Cancel runs by ID or status", Body: t[wire.RunCancelMany](), Query: t[wire.RunCancelManyQuery](), Status: nc},
		{Method: "GET", Pattern: "/runs/{run_id}/stream", OperationID: "joinStatelessRunStream", Tag: "Stateless Runs", Summary: "Stream a run's events by run ID alone", Query: t[wire.RunJoinStreamQuery](), Status: ok, Stream: true},

		// Crons.
		{Method: "POST", Pattern: "/runs/crons", OperationID: "createCron", Tag: "Crons", Summary: "Schedule stateless runs", Description: "The body also carries every run-create field (input, config, context, stream_mode...): the payload of each run.", Body: t[wire.CronCreate](), Status: ok, Response: t[wire.Cron]()},
		{Method: "POST", Pattern: "/threads/{thread_id}/runs/crons", OperationID: "createThreadCron", Tag: "Crons", Summary: "Schedule runs on a thread", Description: "The body also carries every run-create field (input, config, context, stream_mode...): the payload of each run.", Body: t[wire.CronCreate](), Status: ok, Response: t[wire.Cron]()},
		{Method: "POST", Pattern: "/runs/crons/search", OperationID: "searchCrons", Tag: "Crons", Summary: "Search crons", Body: t[wire.CronSearch](), Status: ok, Response: t[[]wire.Cron]()},
		{Method: "POST", Pattern: "/runs/crons/count", OperationID: "countCrons", Tag: "Crons", Summary: "Count crons", Body: t[wire.CronCount](), Status: ok, Response: t[int]()},
		{Method: "PATCH", Pattern: "/runs/crons/{cron_id}", OperationID: "updateCron", Tag: "Crons", Summary: "Update a cron", Description: "Payload fields (input, config, context, webhook, interrupt_before, interrupt_after, stream_mode, stream_subgraphs, stream_resumable, durability) replace the payload's.", Body: t[wire.CronPatch](), Status: ok, Response: t[wire.Cron]()},
		{Method: "DELETE", Pattern: "/runs/crons/{cron_id}", OperationID: "deleteCron", Tag: "Crons", Summary: "Delete a cron", Status: nc},

		// Feedback on runs.
		{Method: "POST", Pattern: "/threads/{thread_id}/runs/{run_id}/feedback", OperationID: "createRunFeedback", Tag: "Feedback", Summary: "Record a person's feedback on a run", Description: `key defaults to "user_score"; score is in [0, 1] (1 thumbs up, 0 down).`, Body: t[wire.FeedbackCreate](), Status: ok, Response: t[wire.Feedback]()},
		{Method: "GET", Pattern: "/threads/{thread_id}/runs/{run_id}/feedback", OperationID: "listRunFeedback", Tag: "Feedback", Summary: "List a run's feedback, oldest first", Query: t[wire.FeedbackListQuery](), Status: ok, Response: t[[]wire.Feedback]()},
		{Method: "DELETE", Pattern: "/threads/{thread_id}/runs/{run_id}/feedback/{feedback_id}", OperationID: "deleteRunFeedback", Tag: "Feedback", Summary: "Delete one feedback entry", Status: nc},

		// Evaluation datasets (docs/eval.md).
		{Method: "POST", Pattern: "/datasets", OperationID: "createDataset", Tag: "Datasets", Summary: "Create a dataset (version 1) with its cases", Body: t[wire.DatasetCreate](), Status: ok, Response: t[wire.Dataset](), Problems: []int{409}},
		{Method: "POST", Pattern: "/datasets/search", OperationID: "searchDatasets", Tag: "Datasets", Summary: "Search datasets by name, newest first", Body: t[wire.DatasetSearch](), Status: ok, Response: t[[]wire.Dataset]()},
		{Method: "POST", Pattern: "/datasets/import", OperationID: "importDataset", Tag: "Datasets", Summary: "Create a dataset from a Trellis JSONL file", Description: "The body is the JSONL that trellis eval reads: a header line {name, version, description, criteria}, then one case per line. A name the tenant has is 409.", Body: t[string](), MediaType: "application/x-ndjson", Status: ok, Response: t[wire.Dataset](), Problems: []int{409}},
		{Method: "GET", Pattern: "/datasets/{dataset_id}", OperationID: "getDataset", Tag: "Datasets", Summary: "Get a dataset", Status: ok, Response: t[wire.Dataset]()},
		{Method: "PATCH", Pattern: "/datasets/{dataset_id}", OperationID: "patchDataset", Tag: "Datasets", Summary: "Change a dataset's name, description, metadata or criteria (no new version)", Body: t[wire.DatasetPatch](), Status: ok, Response: t[wire.Dataset](), Problems: []int{409}},
		{Method: "DELETE", Pattern: "/datasets/{dataset_id}", OperationID: "deleteDataset", Tag: "Datasets", Summary: "Delete a dataset with every version of its cases", Status: nc},
		{Method: "POST", Pattern: "/datasets/{dataset_id}/cases", OperationID: "addDatasetCases", Tag: "Datasets", Summary: "Add cases, making a new version", Body: t[wire.DatasetCasesAdd](), Status: ok, Response: t[wire.Dataset](), Problems: []int{409}},
		{Method: "GET", Pattern: "/datasets/{dataset_id}/cases", OperationID: "listDatasetCases", Tag: "Datasets", Summary: "List the cases as of a version (default the latest)", Query: t[wire.DatasetCasesQuery](), Status: ok, Response: t[wire.DatasetCases]()},
		{Method: "PATCH", Pattern: "/datasets/{dataset_id}/cases/{case_id}", OperationID: "patchDatasetCase", Tag: "Datasets", Summary: "Change a case, making a new version", Description: "The body's members replace the case's (an eval.Case object; its id cannot change).", Body: t[json.RawMessage](), Status: ok, Response: t[wire.Dataset]()},
		{Method: "DELETE", Pattern: "/datasets/{dataset_id}/cases/{case_id}", OperationID: "deleteDatasetCase", Tag: "Datasets", Summary: "Remove a case, making a new version", Status: ok, Response: t[wire.Dataset]()},
		{Method: "GET", Pattern: "/datasets/{dataset_id}/export", OperationID: "exportDataset", Tag: "Datasets", Summary: "Export a version (default the latest) as Trellis JSONL", Description: "The JSONL trellis eval reads; the header's version is the dataset version.", Query: t[wire.DatasetExportQuery](), MediaType: "application/x-ndjson", Status: ok, Response: t[string]()},
		{Method: "GET", Pattern: "/threads/{thread_id}/case", OperationID: "recordThreadCase", Tag: "Datasets", Summary: "The thread as an evaluation case to edit and add to a dataset",
			Description: "An eval.Case: the first user message as the input, later ones as turns, the answers the interrupts got (with their kind), the final answer and the agent's tool calls as expectations. 409 when the thread has not run.", Status: ok, Response: t[json.RawMessage](), Problems: []int{409}},

		// Experiments: a dataset version run against an assistant, each
		// case × repetition a unit on the run queue (docs/eval.md).
		{Method: "POST", Pattern: "/experiments", OperationID: "createExperiment", Tag: "Experiments", Summary: "Start an experiment: run a dataset version against an assistant",
			Description: "Each case × repetition is a unit of work run as a job of the run queue, on any replica, on a fresh thread; its result is recorded once. A missing dataset, assistant or baseline is 422; a server without a run queue answers 503.",
			Body:        t[wire.ExperimentCreate](), Status: http.StatusCreated, Response: t[wire.Experiment](), Problems: []int{503}},
		{Method: "GET", Pattern: "/experiments", OperationID: "listExperiments", Tag: "Experiments", Summary: "List experiments, newest first, by dataset or assistant", Query: t[wire.ExperimentListQuery](), Status: ok, Response: t[[]wire.Experiment]()},
		{Method: "GET", Pattern: "/experiments/{experiment_id}", OperationID: "getExperiment", Tag: "Experiments", Summary: "Get an experiment: status, progress and, once done, its summary", Status: ok, Response: t[wire.Experiment]()},
		{Method: "GET", Pattern: "/experiments/{experiment_id}/results", OperationID: "listExperimentResults", Tag: "Experiments", Summary: "The recorded units, in case order then repetition", Status: ok, Response: t[[]wire.ExperimentResult]()},
		{Method: "GET", Pattern: "/experiments/{experiment_id}/stream", OperationID: "streamExperiment", Tag: "Experiments", Summary: "Stream the experiment's progress",
			Description: "A \"progress\" event (experiment_id, status, progress) at the start and at each change, then \"end\" with the experiment once it reached a terminal status.", Status: ok, Stream: true},
		{Method: "POST", Pattern: "/experiments/{experiment_id}/cancel", OperationID: "cancelExperiment", Tag: "Experiments", Summary: "Cancel an experiment: no further unit starts",
			Description: "Units already running finish; an experiment that already ended is 409.", Status: ok, Response: t[wire.Experiment](), Problems: []int{409}},
		{Method: "GET", Pattern: "/experiments/{experiment_id}/compare", OperationID: "compareExperiments", Tag: "Experiments", Summary: "Compare with a baseline experiment case by case",
			Description: "Regressions and improvements per case and a paired bootstrap over the cases' mean scores (seed 1), as trellis eval --baseline.", Query: t[wire.ExperimentCompareQuery](), Status: ok, Response: t[eval.Comparison]()},

		// Store.
		{Method: "PUT", Pattern: "/store/items", OperationID: "putStoreItem", Tag: "Store", Summary: "Store or replace an item", Body: t[wire.StorePut](), Status: nc},
		{Method: "GET", Pattern: "/store/items", OperationID: "getStoreItem", Tag: "Store", Summary: "Get an item (null when there is none)", Query: t[wire.StoreGetQuery](), Status: ok, Response: t[wire.Item](), Problems: []int{404}},
		{Method: "DELETE", Pattern: "/store/items", OperationID: "deleteStoreItem", Tag: "Store", Summary: "Delete an item", Body: t[wire.StoreDelete](), Status: nc},
		{Method: "POST", Pattern: "/store/items/search", OperationID: "searchStoreItems", Tag: "Store", Summary: "Search items under a namespace prefix", Body: t[wire.StoreSearch](), Status: ok, Response: t[wire.StoreSearchResult]()},
		{Method: "POST", Pattern: "/store/namespaces", OperationID: "listStoreNamespaces", Tag: "Store", Summary: "List namespaces", Body: t[wire.StoreListNamespaces](), Status: ok, Response: t[wire.StoreNamespaces]()},

		// System.
		{Method: "GET", Pattern: "/ok", OperationID: "ok", Tag: "System", Summary: "Health check", Query: t[wire.OkQuery](), Status: ok, Response: t[wire.Ok](), Problems: []int{503}},
		{Method: "GET", Pattern: "/info", OperationID: "info", Tag: "System", Summary: "What this server is and supports", Status: ok, Response: t[wire.Info]()},
		{Method: "GET", Pattern: "/openapi.json", OperationID: "openapi", Tag: "System", Summary: "This document", Status: ok, Response: t[json.RawMessage]()},

		// The OpenAI chat wire (server/openaiapi, docs/openai.md).
		{Method: "GET", Pattern: "/v1/threads/{thread_id}/messages", OperationID: "listThreadMessages", Tag: "OpenAI", Summary: "The thread's conversation as chat messages, with the answers given to what its runs asked (Trellis's own)",
			Description: "Built from the same transcript as GET /threads/{thread_id}/transcript; see docs/openai.md.", Status: ok, Response: t[openaiapi.HistoryList](), Errors: t[openaiapi.ErrorResponse](), Problems: []int{404}},
		{Method: "GET", Pattern: "/v1/models", OperationID: "listModels", Tag: "OpenAI", Summary: "List the assistants as OpenAI models (graph IDs, then assistant IDs)", Status: ok, Response: t[openaiapi.ModelList](), Errors: t[openaiapi.ErrorResponse]()},
		{Method: "POST", Pattern: "/v1/chat/completions", OperationID: "createChatCompletion", Tag: "OpenAI", Summary: "Run the assistant named by model on the conversation's thread",
			Description: `With "stream": true the answer is a text/event-stream of chat.completion.chunk objects ending with "data: [DONE]", and X-Trellis-Status is a trailer. The "trellis" members are Trellis's extension; see docs/openai.md.`,
			Body:        t[openaiapi.ChatRequest](), Status: ok, Response: t[openaiapi.ChatCompletion](), Errors: t[openaiapi.ErrorResponse](),
			Headers:  map[string]string{openaiapi.HeaderThread: "the conversation's thread", openaiapi.HeaderStatus: "done, waiting (the run waits for a person) or reasked (the answer did not fit)"},
			Problems: []int{404, 409}, MayStream: true},

		// MCP (server/mcpapi, docs/mcp-server.md): the assistants as tools over
		// MCP's streamable HTTP transport, one endpoint for three methods.
		{Method: "POST", Pattern: "/mcp", OperationID: "mcpPost", Tag: "MCP", Summary: "Send MCP JSON-RPC messages (initialize, tools/list, tools/call, answers to elicitations)",
			Description: `MCP streamable HTTP (protocol 2025-11-25 and earlier). Send Accept: application/json, text/event-stream. The initialize answer sets Mcp-Session-Id; send it on every later request. A request's answer is JSON or a text/event-stream carrying its progress notifications and elicitation requests, then its response; notifications and responses are answered 202. An unknown or expired session is 404: initialize again. See docs/mcp-server.md.`,
			Body:        t[json.RawMessage](), Status: ok, Response: t[json.RawMessage](), NoContent: []int{202},
			Headers: map[string]string{"Mcp-Session-Id": "the session (set by initialize)"}, Problems: []int{403, 404, 406}, MayStream: true},
		{Method: "GET", Pattern: "/mcp", OperationID: "mcpGet", Tag: "MCP", Summary: "Open the MCP session's stream of server messages", Description: "Needs the Mcp-Session-Id header; counts against limits.max_streams.", Status: ok, Stream: true, Problems: []int{400, 403, 404, 405}},
		{Method: "DELETE", Pattern: "/mcp", OperationID: "mcpDelete", Tag: "MCP", Summary: "End the MCP session named by Mcp-Session-Id", Status: http.StatusNoContent, Problems: []int{400, 403, 404}},
		// The AG-UI wire (server/aguiapi, docs/agui.md).
		{Method: "POST", Pattern: "/ag-ui/{assistant}", OperationID: aguiapi.OperationID, Tag: "AG-UI", Summary: "Run the assistant (ID, graph ID or name) on the input's thread, streaming AG-UI events",
			Description: `The body is AG-UI's RunAgentInput (protocol 1.0); the answer is a text/event-stream of AG-UI events, from RUN_STARTED to RUN_FINISHED (with the interrupt outcome when the run waits for a person) or RUN_ERROR. See docs/agui.md.`,
			Body:        t[aguiapi.RunAgentInput](), Status: ok, Response: t[aguiapi.Event](), Stream: true,
			Problems: []int{404, 409}},
		// The A2A wire (server/a2aapi, docs/a2a.md).
		{Method: "GET", Pattern: "/.well-known/agent-card.json", OperationID: a2aapi.OperationCard, Tag: "A2A", Summary: "The A2A agent card of an assistant (?assistant_id=: ID, graph ID or name; default the first)",
			Description: `A2A 1.0's card: supportedInterfaces lists the JSON-RPC endpoint /a2a/{assistant} once per protocol version (1.0 and 0.3), with absolute URLs. Readable without an API key only when a2a.public_card is set. See docs/a2a.md.`,
			Query:       t[a2aapi.CardQuery](), Status: ok, Response: t[json.RawMessage](), Problems: []int{404}},
		{Method: "GET", Pattern: "/a2a/{assistant}/.well-known/agent-card.json", OperationID: a2aapi.OperationAssistantCard, Tag: "A2A", Summary: "The A2A agent card of the assistant (ID, graph ID or name), where a client given its endpoint looks",
			Description: `The same card as /.well-known/agent-card.json?assistant_id=. See docs/a2a.md.`,
			Status:      ok, Response: t[json.RawMessage]()},
		{Method: "POST", Pattern: "/a2a/{assistant}", OperationID: a2aapi.OperationRPC, Tag: "A2A", Summary: "A2A JSON-RPC: send and stream messages, get and cancel tasks of the assistant (ID, graph ID or name)",
			Description: `A2A 1.0 JSON-RPC with A2A-Version: 1.0 (SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask); without the header, 0.3's (message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe). Errors are JSON-RPC errors with status 200; the streaming methods answer a text/event-stream of JSON-RPC responses. A context is a thread, a task its run and the runs answering its questions. See docs/a2a.md.`,
			Body:        t[json.RawMessage](), Status: ok, Response: t[json.RawMessage](), MayStream: true},
		{Method: "GET", Pattern: "/a2a/{assistant}/rest/{path...}", OperationID: a2aapi.OperationRESTGet, Tag: "A2A", Summary: "A2A 1.0 REST binding: read tasks (tasks, tasks/{id}) and push configs of the assistant",
			Description: `The HTTP+JSON binding of A2A 1.0 over the same agent as the JSON-RPC endpoint: GET tasks (ListTasks), tasks/{id} (GetTask), tasks/{id}/pushNotificationConfigs[/{configId}]. Errors are A2A REST errors with their HTTP status. See docs/a2a.md.`,
			Status:      ok, Response: t[json.RawMessage]()},
		{Method: "POST", Pattern: "/a2a/{assistant}/rest/{path...}", OperationID: a2aapi.OperationRESTPost, Tag: "A2A", Summary: "A2A 1.0 REST binding: send and stream messages, cancel and subscribe to tasks of the assistant",
			Description: `POST message:send, message:stream (text/event-stream), tasks/{id}:cancel, tasks/{id}:subscribe (text/event-stream), tasks/{id}/pushNotificationConfigs. See docs/a2a.md.`,
			Body:        t[json.RawMessage](), Status: ok, Response: t[json.RawMessage](), MayStream: true},
		{Method: "DELETE", Pattern: "/a2a/{assistant}/rest/{path...}", OperationID: a2aapi.OperationRESTDelete, Tag: "A2A", Summary: "A2A 1.0 REST binding: delete a task's push config",
			Description: `DELETE tasks/{id}/pushNotificationConfigs/{configId}. See docs/a2a.md.`,
			Status:      ok, Response: t[json.RawMessage]()},
	}
	return rs
}
