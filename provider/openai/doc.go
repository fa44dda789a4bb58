// Package openai adapts OpenAI's Chat Completions API, and every server
// that speaks it (vLLM, Ollama, DeepSeek, Qwen, Ark and others), to
// llm.Model.
//
//	m, err := openai.New("gpt-4o-mini") // OPENAI_API_KEY from the environment
//	local, err := openai.New("qwen3", openai.WithBaseURL("http://localhost:8000/v1"),
//		openai.WithProviderName("openai-compatible"))
//
// What a caller can rely on:
//
//   - The SDK's own retries are off: one call is one HTTP request. Wrap the
//     model with llm.Retry for retries; every HTTP failure is an
//     *llm.APIError carrying the status, the provider's error type, code
//     and message, and the wait the server asked for (Retry-After or
//     retry-after-ms), so the retry policy can honour it.
//   - Cancelling the context ends a call, or a stream, promptly; the
//     context's error comes back unwrapped and is never retried.
//   - Reasoning text, which the official API does not return but DeepSeek,
//     vLLM, Qwen and Ollama do (as reasoning_content or reasoning), lands in
//     Message.Reasoning and Chunk.Reasoning. Reasoning is never sent back.
//   - Stream yields one llm.Chunk per server-sent event, tool-call fragments
//     untouched; feed them to an llm.Assembler (or use llm.Call).
//   - Bad requests (a tool message without a call ID, an image in a system
//     message, a schema that is not a JSON object) fail before anything is
//     sent, with a plain error saying what to fix; those are not retryable.
package openai
