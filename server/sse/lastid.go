package sse

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// LastEventIDQuery is the query parameter LastEventID falls back to when
// the Last-Event-ID header is absent. The SDK always sends the header;
// the parameter is for clients that cannot set headers (a browser's
// EventSource on a fresh connection).
const LastEventIDQuery = "last_event_id"

// ReplayAll is the cursor LastEventID returns for "-1": the client wants
// every event of the run from the first (the SDK's joinStream sends it
// when it has seen nothing yet).
const ReplayAll int64 = -1

// FormatID formats an event sequence number as the id: the Writer sends
// and LastEventID parses back. Event ids are the run's event sequence
// numbers, from 0.
func FormatID(seq int64) string { return strconv.FormatInt(seq, 10) }

// LastEventID reads where a reconnecting client wants to resume, from the
// Last-Event-ID header or else the last_event_id query parameter.
//
// ok is false when neither is given or the value is empty (the SDK sends
// no header before it has seen an event): the client wants only what
// happens from now on. Otherwise after is the id of the last event the
// client has, and it wants the events after it; "-1" gives ReplayAll, so
// after+1 is always the first sequence number to send. Anything else —
// not a decimal integer, or below -1 — is an error the handler should
// answer with 400.
func LastEventID(r *http.Request) (after int64, ok bool, err error) {
	v, src := r.Header.Get("Last-Event-ID"), "Last-Event-ID header"
	if v == "" && r.URL != nil {
		v, src = r.URL.Query().Get(LastEventIDQuery), LastEventIDQuery+" query parameter"
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil || n < ReplayAll {
		return 0, false, fmt.Errorf("sse: %s %q is not an event id this server sent: use the id: of the last event received (a decimal number from 0), or -1 to replay the run from its first event", src, v)
	}
	return n, true, nil
}
