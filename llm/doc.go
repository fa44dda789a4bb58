// Package llm is Trellis's provider-neutral view of chat models: messages
// with IDs and content parts, the Model interface with Generate and Stream,
// request options, token usage, one stream assembler for every provider,
// history repair, JSON contracts with a correction loop, and retries,
// timeouts and fallbacks around any model.
//
// Graph nodes call models through Call, which streams tokens onto the
// graph's messages stream (reasoning and answer text marked apart), records
// usage on the running task and repairs the history before sending it.
//
// Vendor SDKs live in provider/*; this package never imports them, so code
// that builds on llm links fast and can be tested with llm/llmtest.
package llm
