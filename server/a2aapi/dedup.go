package a2aapi

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/server/db"
)

// A message sent again — a client that crashed or lost the connection
// before the answer's first byte, and sends the same message (the same
// messageId) once more — must not start a second run. Every run the wire
// creates records the message that started it (mdMessage); a message whose
// ID a run of the same task or context already recorded gets that run's
// task back, and a stream follows that run from its first event. A
// message without contextId has no thread to look in, so its context is
// derived from its ID (contextThread): the same message lands on the same
// thread, where its run is found.

// mdMessage, on a run, is the messageId of the message that started it.
const mdMessage = "a2a_message"

// contextSpace names the derived contexts (UUIDv5).
var contextSpace = uuid.MustParse("5b0f3a52-6c1e-4b7a-9d0e-2f4c8a1b3e6d")

// contextThread is the thread of a message that names no context: derived
// from the tenant, the assistant and the message's ID, so the message sent
// again finds its task.
func (ag *agent) contextThread(msgID string) string {
	return uuid.NewSHA1(contextSpace, []byte(ag.tenant+"\x00"+ag.assistant.ID+"\x00"+msgID)).String()
}

// repeatedRun is the run of this agent on thread that msgID started, if
// any.
func (ag *agent) repeatedRun(ctx context.Context, thread, msgID string) (db.Run, bool, error) {
	if msgID == "" {
		return db.Run{}, false, nil
	}
	rs, err := ag.h.DB.ListRuns(ctx, ag.tenant, thread, db.RunQuery{Limit: maxTaskRuns})
	if err != nil {
		return db.Run{}, false, err
	}
	return findMessage(rs, ag.assistant.ID, msgID)
}

// findMessage is the run among rs of assistant that msgID started.
func findMessage(rs []db.Run, assistant, msgID string) (db.Run, bool, error) {
	for _, r := range rs {
		if id, _ := r.Metadata[mdMessage].(string); id == msgID && r.AssistantID == assistant && r.Metadata[mdSource] == source {
			return r, true, nil
		}
	}
	return db.Run{}, false, nil
}

// repeatTurn is the turn of a message sent again: the task its run
// belongs to, and that run.
func repeatTurn(run db.Run, msg *a2a.Message) *turn {
	root, _ := run.Metadata[mdTask].(string)
	if root == "" {
		root = run.ID
	}
	return &turn{task: taskID(root, run.ThreadID), run: run, msg: msg, repeat: true}
}
