package llm

import "context"

type voiceKey struct{}

// WithVoice returns a context under which Call streams the reply's chunks
// tagged with a voice (the chunk's Meta["voice"]): an agent's internal
// participant (a reviewer), whose reply will carry the same Message.Name.
// A client can then show the tokens as the agent's working rather than as
// its answer before the message lands. An empty name leaves ctx as is.
func WithVoice(ctx context.Context, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, voiceKey{}, name)
}

// VoiceOf returns the voice WithVoice set on ctx, or "".
func VoiceOf(ctx context.Context) string {
	s, _ := ctx.Value(voiceKey{}).(string)
	return s
}

// MetaVoice is the MessageChunk.Meta key naming a chunk's voice.
const MetaVoice = "voice"
