package api

import (
	"net/http"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/internal/transcript"
)

// getThreadTranscript answers GET /threads/{thread_id}/transcript (a
// Trellis extension): the thread's messages, the person's answers and
// the timeline of what its runs did, in order, from what the server
// stored (server/internal/transcript).
func (a *API) getThreadTranscript(w http.ResponseWriter, r *http.Request) {
	t, ok := a.loadThread(w, r)
	if !ok {
		return
	}
	turns, err := transcript.Build(r.Context(), a.DB, a.Saver, a.tenant(r), t)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if turns == nil {
		turns = []transcript.Turn{}
	}
	wire.WriteJSON(w, r, http.StatusOK, turns)
}
