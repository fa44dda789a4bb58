package a2aapi

import (
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

// A voiced chunk (a remote agent's words the run streamed while calling
// it, a reviewer's) is the agent's working: the A2A answer streams only
// the agent's own text.
func TestChunkerSkipsVoices(t *testing.T) {
	c := newChunker()
	var got string
	for _, data := range []string{
		`[{"id":"a2a:t1:artifact:a","type":"AIMessageChunk","content":"remote words","name":"greeter"},{}]`,
		`[{"id":"m1","type":"AIMessageChunk","content":"Hello"},{}]`,
		`[{"id":"m1","type":"AIMessageChunk","content":", Ada"},{}]`,
	} {
		got += c.add(db.Event{Event: "messages", Data: []byte(data)})
	}
	if got != "Hello, Ada" {
		t.Errorf("streamed %q, want only the agent's own text", got)
	}
}
