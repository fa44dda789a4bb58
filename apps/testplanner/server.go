package testplanner

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/tool/mcp"
)

// sampleTool is one tool of the sample shop server.
type sampleTool struct {
	name, description, schema string
	readOnly                  bool
}

// sampleTools is the shop API whose tools the example plans tests for.
// Their descriptions carry the business rules a test plan should probe.
var sampleTools = []sampleTool{
	{name: "get_customer", readOnly: true,
		description: "Return one customer's profile (name, email, city, status) by ID. Unknown IDs give a not-found error.",
		schema: `{"type":"object","properties":{
			"customer_id":{"type":"integer","minimum":1,"description":"the customer's ID"}},
			"required":["customer_id"],"additionalProperties":false}`},
	{name: "list_orders", readOnly: true,
		description: "List a customer's orders, newest first, optionally only those in one status. A customer without orders gives an empty list.",
		schema: `{"type":"object","properties":{
			"customer_id":{"type":"integer","minimum":1},
			"status":{"type":"string","enum":["pending","paid","shipped","delivered","cancelled"]},
			"limit":{"type":"integer","minimum":1,"maximum":50,"default":10}},
			"required":["customer_id"],"additionalProperties":false}`},
	{name: "search_products", readOnly: true,
		description: "Search products by words of their name, optionally in one category and only those in stock. Inactive products are never returned.",
		schema: `{"type":"object","properties":{
			"query":{"type":"string","minLength":2},
			"category":{"type":"string","enum":["kitchen","pantry","home","stationery","accessories"]},
			"in_stock_only":{"type":"boolean","default":false}},
			"required":["query"],"additionalProperties":false}`},
	{name: "create_order",
		description: "Create a pending order for an active customer. Every product must be active and have enough stock; suspended customers are refused. The total is computed from the current prices.",
		schema: `{"type":"object","properties":{
			"customer_id":{"type":"integer","minimum":1},
			"items":{"type":"array","minItems":1,"items":{"type":"object","properties":{
				"product_id":{"type":"integer","minimum":1},
				"quantity":{"type":"integer","minimum":1,"maximum":20}},
				"required":["product_id","quantity"],"additionalProperties":false}},
			"payment_method":{"type":"string","enum":["card","transfer","wallet"]}},
			"required":["customer_id","items","payment_method"],"additionalProperties":false}`},
	{name: "cancel_order",
		description: "Cancel an order that is pending or paid (a paid order's payment is refunded). Shipped, delivered and already cancelled orders cannot be cancelled.",
		schema: `{"type":"object","properties":{
			"order_id":{"type":"integer","minimum":1},
			"reason":{"type":"string","minLength":3,"maxLength":200}},
			"required":["order_id","reason"],"additionalProperties":false}`},
	{name: "refund_payment",
		description: "Refund all or part of a captured payment. The amount must be positive and at most what was captured; authorized, failed and refunded payments cannot be refunded.",
		schema: `{"type":"object","properties":{
			"payment_id":{"type":"integer","minimum":1},
			"amount":{"type":"number","exclusiveMinimum":0},
			"reason":{"type":"string","minLength":3}},
			"required":["payment_id","amount","reason"],"additionalProperties":false}`},
	{name: "update_stock",
		description: "Add to or remove from a product's stock. A negative delta removes units; stock can never go below zero.",
		schema: `{"type":"object","properties":{
			"product_id":{"type":"integer","minimum":1},
			"delta":{"type":"integer","minimum":-1000,"maximum":1000,"not":{"const":0}},
			"reason":{"type":"string","enum":["restock","correction","damage"]}},
			"required":["product_id","delta","reason"],"additionalProperties":false}`},
}

// SampleToolNames returns the names of the sample server's tools, in the
// order the planner takes them (by name).
func SampleToolNames() []string {
	names := make([]string, 0, len(sampleTools))
	for _, t := range sorted(sampleTools, func(t sampleTool) string { return t.name }) {
		names = append(names, t.name)
	}
	return names
}

// SampleServer returns the sample shop API as an MCP server: seven tools
// with realistic input schemas. It is the system under test whose tools the
// example plans tests for; its handlers only acknowledge calls (the planner
// reads the tools, it does not call them).
func SampleServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "sample-shop", Version: "1"}, nil)
	for _, t := range sampleTools {
		ann := &sdk.ToolAnnotations{ReadOnlyHint: t.readOnly}
		if !t.readOnly {
			destructive := t.name != "create_order"
			ann.DestructiveHint = &destructive
		}
		name := t.name
		srv.AddTool(&sdk.Tool{Name: t.name, Description: t.description, InputSchema: json.RawMessage(t.schema), Annotations: ann},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				msg := "sample shop: " + name + " accepted " + string(req.Params.Arguments)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}}, nil
			})
	}
	return srv
}

// ConnectSample serves SampleServer in this process and connects an MCP
// client to it over the SDK's in-memory transport. Close the client when
// done; that ends the server's session too.
func ConnectSample(ctx context.Context) (*mcp.Client, error) {
	srv := SampleServer()
	return mcp.Connect(ctx, mcp.TransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		client, server := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, server, nil); err != nil {
			return nil, err
		}
		return client, nil
	}), mcp.WithName("sample-shop"))
}
