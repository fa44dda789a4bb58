//go:build tools

// Package deps pins modules whose importing packages are being written.
// It is never built; it only keeps go.mod stable until the real imports land.
package deps

import (
	_ "github.com/anthropics/anthropic-sdk-go/v2"
	_ "github.com/google/jsonschema-go/jsonschema"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/openai/openai-go/v3"
)
