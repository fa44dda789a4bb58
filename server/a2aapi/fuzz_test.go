package a2aapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/server/db"
)

// Whatever the body and version header, the endpoint answers without
// panicking: a JSON-RPC answer (or the 413 of an oversized body), never a
// 5xx.
func FuzzRPC(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"x"}}]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"a@b"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"@"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"` + strings.Repeat("a", 300) + `@t"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","taskId":"x@y","parts":[{"data":{"a":1}}]}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}}`,
		`[1,2]`, `{`, ``, `null`,
	} {
		for _, v := range []string{"1.0", "", "0.3", "9"} {
			f.Add(seed, v)
		}
	}
	e := newEnv(f)
	h := e.h.Handlers()[OperationRPC]
	f.Fuzz(func(t *testing.T, body, version string) {
		req := httptest.NewRequest(http.MethodPost, "/a2a/chat-a", strings.NewReader(body))
		req.SetPathValue("assistant", "chat-a")
		if version != "" {
			req.Header.Set(a2a.SvcParamVersion, version)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Errorf("%q (version %q): %d %s", body, version, rec.Code, rec.Body)
		}
	})
}

// Task IDs from clients are read without panicking, and only the ones
// this wire makes name a run and a thread.
func FuzzTaskID(f *testing.F) {
	for _, s := range []string{"", "@", "a@", "@b", "run@thread@x", "01a2@t", "\x00@\x01", strings.Repeat("x", 600) + "@t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		run, thread, ok := splitTaskID(a2a.TaskID(id))
		if ok && (db.IDProblem(run) != "" || db.IDProblem(thread) != "" || string(taskID(run, thread)) != id) {
			t.Errorf("%q read as run %q thread %q", id, run, thread)
		}
	})
}
