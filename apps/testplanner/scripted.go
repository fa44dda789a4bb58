package testplanner

import (
	"fmt"

	"github.com/trellis-agents/trellis/llm/llmtest"
)

// AssessRequest matches the assessment request for tool after round
// targeted query rounds (0: after the sample rows).
func AssessRequest(tool string, round int) llmtest.Matcher {
	return llmtest.And(
		llmtest.LastUserContains(fmt.Sprintf(AssessPrompt, tool)),
		llmtest.LastUserContains(fmt.Sprintf("Targeted query rounds used: %d of", round)),
	)
}

// PlanRequest matches the plan request for tool.
func PlanRequest(tool string) llmtest.Matcher {
	return llmtest.LastUserContains(fmt.Sprintf(PlanPrompt, tool))
}

// ScriptedName is the name of the model ScriptedModel returns.
const ScriptedName = "llmtest:testplanner-scenario"

type scriptedTool struct {
	tool   string
	assess []Assessment // by round
	plan   []CaseReply
}

func enough(reason string) Assessment { return Assessment{Enough: true, Reason: reason} }

func more(reason string, queries ...string) Assessment {
	return Assessment{Reason: reason, Queries: queries}
}

func tc(name string, args map[string]any, expected string, data ...string) CaseReply {
	return CaseReply{Name: name, Arguments: args, Expected: expected, DataUsed: data}
}

type obj = map[string]any

// scenario is what the scripted model answers for the sample server and
// database. Some tools need targeted queries first; refund_payment also
// asks for an UPDATE, which the read-only layer refuses.
var scenario = []scriptedTool{
	{tool: "cancel_order",
		assess: []Assessment{
			more("The sample shows only five orders; I need orders in every status with their payments.",
				"SELECT o.id, o.status, o.customer_id, p.id AS payment_id, p.status AS payment_status FROM orders o LEFT JOIN payments p ON p.order_id = o.id ORDER BY o.id"),
			enough("Orders 1004 (pending, no payment), 1003 (paid, payment 503), 1002 (shipped) and 1006 (cancelled) cover every rule."),
		},
		plan: []CaseReply{
			tc("cancel a pending order", obj{"order_id": 1004, "reason": "customer changed their mind"}, "order 1004 becomes cancelled", "orders.id=1004", "orders.status=pending"),
			tc("cancel a paid order refunds it", obj{"order_id": 1003, "reason": "duplicate order"}, "order 1003 becomes cancelled and payment 503 becomes refunded", "orders.id=1003", "payments.id=503"),
			tc("shipped order cannot be cancelled", obj{"order_id": 1002, "reason": "too late"}, "refused: order 1002 is shipped; nothing changes", "orders.id=1002", "orders.status=shipped"),
			tc("cancelled order cannot be cancelled again", obj{"order_id": 1006, "reason": "again"}, "refused: order 1006 is already cancelled", "orders.id=1006"),
			tc("unknown order", obj{"order_id": 9999, "reason": "test"}, "not-found error", "orders: no id 9999"),
			tc("reason too short", obj{"order_id": 1004, "reason": "no"}, "invalid arguments: reason needs at least 3 characters", "orders.id=1004"),
		}},
	{tool: "create_order",
		assess: []Assessment{
			more("I need products that are out of stock or inactive, and a suspended customer.",
				"SELECT id, sku, name, stock, active FROM products WHERE stock <= 3 OR active = 0 ORDER BY id",
				"SELECT id, email, status FROM customers WHERE status = 'suspended'"),
			enough("Product 4 has no stock, 9 is inactive, 6 has 3 left; customer 4 is suspended."),
		},
		plan: []CaseReply{
			tc("order for an active customer", obj{"customer_id": 1, "items": []any{obj{"product_id": 3, "quantity": 2}}, "payment_method": "card"},
				"a pending order for customer 1 with total 13.5", "customers.id=1", "products.id=3", "products.price=6.75"),
			tc("suspended customer is refused", obj{"customer_id": 4, "items": []any{obj{"product_id": 1, "quantity": 1}}, "payment_method": "wallet"},
				"refused: customer 4 is suspended; no order is created", "customers.id=4", "customers.status=suspended"),
			tc("product without stock", obj{"customer_id": 2, "items": []any{obj{"product_id": 4, "quantity": 1}}, "payment_method": "card"},
				"refused: product 4 has no stock", "products.id=4", "products.stock=0"),
			tc("inactive product", obj{"customer_id": 2, "items": []any{obj{"product_id": 9, "quantity": 1}}, "payment_method": "transfer"},
				"refused: product 9 is not active", "products.id=9", "products.active=0"),
			tc("more than the stock", obj{"customer_id": 3, "items": []any{obj{"product_id": 6, "quantity": 5}}, "payment_method": "card"},
				"refused: product 6 has only 3 in stock", "products.id=6", "products.stock=3"),
			tc("no items", obj{"customer_id": 1, "items": []any{}, "payment_method": "card"}, "invalid arguments: items needs at least one entry", "customers.id=1"),
		}},
	{tool: "get_customer",
		assess: []Assessment{enough("Customers 1-5 are in the sample, one of them (4) suspended.")},
		plan: []CaseReply{
			tc("existing customer", obj{"customer_id": 3}, "Mei Tanaka, mei.tanaka@example.com, Osaka, active", "customers.id=3"),
			tc("suspended customer is still returned", obj{"customer_id": 4}, "Diego Salvatierra with status suspended", "customers.id=4", "customers.status=suspended"),
			tc("unknown customer", obj{"customer_id": 999}, "not-found error", "customers: ids 1-12"),
			tc("ID below the minimum", obj{"customer_id": 0}, "invalid arguments: customer_id must be at least 1"),
		}},
	{tool: "list_orders",
		assess: []Assessment{
			more("I need order counts per customer and a customer without orders.",
				"SELECT customer_id, status, count(*) AS orders FROM orders GROUP BY customer_id, status ORDER BY customer_id",
				"SELECT id, name FROM customers WHERE id NOT IN (SELECT customer_id FROM orders)"),
			enough("Customer 1 has orders 1001 and 1002, customer 7 one delivered order, customer 9 none."),
		},
		plan: []CaseReply{
			tc("orders newest first", obj{"customer_id": 1}, "orders 1002 (shipped) then 1001 (delivered)", "orders.customer_id=1"),
			tc("filter by status", obj{"customer_id": 7, "status": "delivered"}, "only order 1009", "orders.customer_id=7", "orders.id=1009"),
			tc("customer without orders", obj{"customer_id": 9}, "an empty list", "customers.id=9"),
			tc("limit one", obj{"customer_id": 1, "limit": 1}, "only order 1002", "orders.customer_id=1"),
			tc("limit above the maximum", obj{"customer_id": 1, "limit": 51}, "invalid arguments: limit must be at most 50"),
		}},
	{tool: "refund_payment",
		assess: []Assessment{
			more("I need payments that are not captured, and to mark one refunded to test a second refund.",
				"SELECT id, order_id, amount, status FROM payments WHERE status <> 'captured' ORDER BY id",
				"UPDATE payments SET status = 'refunded' WHERE id = 501"),
			enough("The update was refused (read-only), but payments 505 and 512 are already refunded, 506 authorized and 510 failed."),
		},
		plan: []CaseReply{
			tc("full refund of a captured payment", obj{"payment_id": 501, "amount": 31.75, "reason": "damaged on arrival"}, "payment 501 becomes refunded for 31.75", "payments.id=501", "payments.amount=31.75"),
			tc("partial refund", obj{"payment_id": 502, "amount": 10, "reason": "late delivery"}, "10 of payment 502 is refunded", "payments.id=502", "payments.status=captured"),
			tc("more than captured", obj{"payment_id": 501, "amount": 40, "reason": "too much"}, "refused: 40 exceeds the captured 31.75", "payments.id=501"),
			tc("authorized payment", obj{"payment_id": 506, "amount": 5, "reason": "not captured"}, "refused: payment 506 is only authorized", "payments.id=506", "payments.status=authorized"),
			tc("already refunded", obj{"payment_id": 505, "amount": 1, "reason": "again"}, "refused: payment 505 is refunded", "payments.id=505", "payments.status=refunded"),
			tc("zero amount", obj{"payment_id": 501, "amount": 0, "reason": "zero"}, "invalid arguments: amount must be above 0", "payments.id=501"),
		}},
	{tool: "search_products",
		assess: []Assessment{enough("The sample has mugs, a kettle and a lamp without stock.")},
		plan: []CaseReply{
			tc("word of a name", obj{"query": "mug"}, "Stoneware mug (MUG-001)", "products.name=Stoneware mug"),
			tc("within a category", obj{"query": "kettle", "category": "kitchen"}, "Electric kettle", "products.category=kitchen"),
			tc("in stock only hides empty products", obj{"query": "Desk lamp", "in_stock_only": true}, "an empty list: Desk lamp has stock 0", "products.name=Desk lamp", "products.stock=0"),
			tc("query too short", obj{"query": "a"}, "invalid arguments: query needs at least 2 characters"),
		}},
	{tool: "update_stock",
		assess: []Assessment{enough("Products 1-5 show stocks of 0, 8, 40, 65 and 120.")},
		plan: []CaseReply{
			tc("restock an empty product", obj{"product_id": 4, "delta": 10, "reason": "restock"}, "product 4 stock goes from 0 to 10", "products.id=4", "products.stock=0"),
			tc("remove damaged units", obj{"product_id": 2, "delta": -3, "reason": "damage"}, "product 2 stock goes from 8 to 5", "products.id=2", "products.stock=8"),
			tc("below zero is refused", obj{"product_id": 5, "delta": -66, "reason": "correction"}, "refused: product 5 has 65; stock unchanged", "products.id=5", "products.stock=65"),
			tc("zero delta", obj{"product_id": 1, "delta": 0, "reason": "correction"}, "invalid arguments: delta must not be 0", "products.id=1"),
			tc("unknown product", obj{"product_id": 999, "delta": 1, "reason": "restock"}, "not-found error", "products: ids 1-14"),
		}},
}

// ScriptedModel returns a scripted model that plans the sample server's
// tools over the sample database, without any network: its replies are
// chosen by the tool and round named in each request (AssessRequest,
// PlanRequest), so the order in which parallel tools ask does not matter,
// and every rule repeats, so a resumed run gets the same answers. Requests
// for anything else fail with llmtest.ErrNoReply.
func ScriptedModel() *llmtest.Model {
	m := llmtest.New(llmtest.WithName(ScriptedName))
	for _, s := range scenario {
		for round, a := range s.assess {
			m.When(AssessRequest(s.tool, round), llmtest.JSON(a)).Repeat()
		}
		m.When(PlanRequest(s.tool), llmtest.JSON(PlanReply{Tool: s.tool, Cases: s.plan, Confidence: 0.8})).Repeat()
	}
	return m
}
