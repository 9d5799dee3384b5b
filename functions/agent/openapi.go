package main

import (
	"fmt"
	"strconv"

	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

// OpenAPIVersion is the version of the API the document describes.
const OpenAPIVersion = "1.0.0"

// chatCookie is the security scheme of the chat's signed-in routes: the
// session cookie POST /chat/signin sets.
const chatCookie = "chatSession"

// The ids the routes take, as oracle.ValidSessionID reads them.
const (
	agentOrderPattern = `^x402_(test|live)_[A-Za-z0-9]{32}$`
	sessionPattern    = `^(cs_(test|live)_[A-Za-z0-9]{1,250}|x402_(test|live)_[A-Za-z0-9]{32})$`
)

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

func jsonBody(schema obj) obj { return obj{"application/json": obj{"schema": schema}} }

func answer(description string, schema obj) obj {
	return obj{"description": description, "content": jsonBody(schema)}
}

func errorAnswer(description string) obj { return answer(description, ref("Error")) }

// page is an HTML answer: its markup is the pages' own, not described.
func page(description string) obj {
	return obj{"description": description, "content": obj{"text/html": obj{}}}
}

func header(description string, required bool) obj {
	return obj{"description": description, "required": required, "schema": obj{"type": "string"}}
}

// public marks an operation that needs no authentication (x402scan and
// @agentcash/discovery read security: [] as "unprotected", or "paid" with
// x-payment-info).
var public = []any{}

// signedIn is the chat's signed-in routes' requirement.
var signedIn = []any{obj{chatCookie: []string{}}}

// openAPI is GET /openapi.json: OpenAPI 3.1 of the whole public API. With
// the rail on it adds the three paid routes (each with x-payment-info as
// x402scan reads it and its 402 documented), the poll, the x402 discovery
// document and the MCP server.
func openAPI(s site, guidance string) obj {
	paths := obj{
		"/": obj{"get": obj{"operationId": "orderForm", "tags": []string{"card"}, "summary": "The order form (HTML)", "security": public,
			"responses": obj{"200": page("The order form.")}}},
		"/api/checkout": obj{"post": checkout()},
		"/oracle/result": obj{"get": obj{"operationId": "resultPage", "tags": []string{"card"}, "summary": "The result page (HTML): Stripe's return and the emails link here",
			"security": public, "parameters": []any{sessionParam("query", false)},
			"responses": obj{"200": page("The result page; its script reads GET /api/verdict."), "400": page("The session id is malformed.")}}},
		"/result/{session_id}": obj{"get": obj{"operationId": "resultPageAtPath", "tags": []string{"card"}, "summary": "The result page (HTML) at its path",
			"security": public, "parameters": []any{sessionParam("path", true)},
			"responses": obj{"200": page("The result page."), "400": page("The session id is malformed.")}}},
		"/api/verdict": obj{"get": obj{"operationId": "verdict", "tags": []string{"card"}, "summary": "An order's verdict, or its state",
			"description": "What the result page polls. The session id (or an agent's order id) is the order's key: whoever holds it reads the order. Never calls the model.",
			"security":    public, "parameters": []any{sessionParam("query", true)}, "responses": orderStates(true)}},
		"/api/health": obj{"get": obj{"operationId": "health", "tags": []string{"health"}, "summary": "The health job's latest run, for uptime monitors",
			"security": public, "responses": obj{
				"200": answer("ok or warn.", ref("Health")),
				"503": answer("critical, stale, no run recorded yet, or the record cannot be read.", ref("Health")),
			}}},
		OpenAPIPath: docPath("openAPI", "This document.", jsonBody(obj{"type": "object"})),
		LLMsPath:    docPath("llmsTxt", "What the service sells and how to pay, for language models and people.", obj{"text/plain": obj{"schema": obj{"type": "string"}}}),
		IconPath:    docPath("icon", "The service's icon.", obj{"image/svg+xml": obj{}}),
	}
	for path, item := range chatPaths() {
		paths[path] = item
	}
	if s.rail() {
		for _, o := range listings(s) {
			paths[routeOf(o.Tier)] = obj{"post": paid(s, o)}
		}
		paths[resultPath+"{id}"] = obj{"get": obj{"operationId": "agentResult", "tags": []string{"x402"}, "summary": "Poll for a verdict paid over x402 (free)",
			"description": "Where a 202's Location points. The order id is the payer's alone to know, and it opens the verdict.",
			"security":    public,
			"parameters": []any{obj{"name": "id", "in": "path", "required": true, "description": "The order id (order_id of the paid answer).",
				"schema": obj{"type": "string", "pattern": agentOrderPattern}}},
			"responses": orderStates(false)}}
		paths[WellKnownPath] = docPath("x402Discovery", "The x402 discovery document: the paid resources and the MCP tools.", jsonBody(ref("X402Discovery")))
		paths[MCPPath] = mcpPaths()
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":       "The Oracle",
			"version":     OpenAPIVersion,
			"description": "A verdict (GREEN, AMBER, RED or NULL) on an idea or a question, in three tiers, paid by card or, for agents, in USDC over x402; and Sisters Chat.",
			"x-guidance":  guidance,
			"contact":     obj{"url": s.BaseURL + "/"},
		},
		"servers":              []any{obj{"url": s.BaseURL}},
		"x-discovery":          obj{"llmsTxtUrl": s.BaseURL + LLMsPath},
		"x-agentcash-guidance": obj{"llmsTxtUrl": s.BaseURL + LLMsPath},
		"paths":                paths,
		"components": obj{
			"schemas": schemas(s),
			"securitySchemes": obj{chatCookie: obj{"type": "apiKey", "in": "cookie", "name": chatsession.CookieName,
				"description": "Sisters Chat's session, set by POST /chat/signin (the emailed link's button)."}},
		},
	}
}

// docPath is a discovery document's path: GET and HEAD, cacheable.
func docPath(id, summary string, content obj) obj {
	ok := func(head bool) obj {
		r := obj{"description": "The document.", "headers": obj{"ETag": header("The document's version.", true)}}
		if !head {
			r["content"] = content
		}
		return r
	}
	op := func(head bool) obj {
		suffix := ""
		if head {
			suffix = "Head"
		}
		return obj{"operationId": id + suffix, "tags": []string{"discovery"}, "summary": summary, "security": public,
			"parameters": []any{obj{"name": "If-None-Match", "in": "header", "schema": obj{"type": "string"}}},
			"responses":  obj{"200": ok(head), "304": obj{"description": "Not modified: the ETag named is current."}}}
	}
	return obj{"get": op(false), "head": op(true)}
}

func sessionParam(in string, required bool) obj {
	return obj{"name": "session_id", "in": in, "required": required, "description": "The Checkout Session's id (cs_…), or an agent's order id (x402_…).",
		"schema": obj{"type": "string", "pattern": sessionPattern}}
}

func checkout() obj {
	return obj{
		"operationId": "checkout", "tags": []string{"card"}, "security": public,
		"summary":     "Start a card payment: a Stripe Checkout page for a tier and a query",
		"description": "From the site's own pages (the Origin must be the site's). The price comes from the tier alone.",
		"requestBody": obj{"required": true, "content": jsonBody(ref("CheckoutRequest"))},
		"responses": obj{
			"200": answer("Where to pay.", obj{"type": "object", "required": []string{"url"}, "properties": obj{"url": obj{"type": "string", "format": "uri"}}}),
			"400": errorAnswer("The body is not a valid order: the message says which field."),
			"403": errorAnswer("The Origin is not the site's."),
			"413": errorAnswer("The body or the query is too long."),
			"500": errorAnswer("An internal error."),
			"503": errorAnswer("Stripe cannot be reached: try again."),
		},
	}
}

// orderStates are the answers of an order's poll (the verdict function):
// the card's GET /api/verdict, or an agent's GET /x402/result/{id}.
func orderStates(card bool) obj {
	r := obj{
		"200": answer("ready (the verdict), dropped or refunded.", ref("OrderState")),
		"202": answer("pending, preparing_again, under_review or payment_unconfirmed: poll again.", ref("OrderState")),
		"400": errorAnswer("The id is missing or malformed."),
		"404": errorAnswer("No such order."),
		"500": answer("The analysis failed: the payment is refunded.", ref("OrderState")),
		"503": errorAnswer("The store cannot be read: try again."),
	}
	if card {
		r["402"] = errorAnswer("The session's payment is not complete.")
		r["410"] = answer("The order is past its retention.", ref("OrderState"))
	}
	return r
}

// paid is one tier's x402 route.
func paid(s site, o listing) obj {
	payment := "The settlement (base64 JSON, x402 v2 SettleResponse)."
	return obj{
		"operationId": "buy_" + string(o.Tier),
		"tags":        []string{"x402"},
		"summary":     fmt.Sprintf("The %s: %s USDC over x402", o.Name, o.USDC),
		"description": fmt.Sprintf("Without PAYMENT-SIGNATURE: 402 with what to pay (the same for every valid query). With it: the payment is checked, "+
			"settled once and the verdict answered, or 202 with where to poll. A body sent is checked first: a bad one is 400, never a 402; "+
			"no body and no payment is a probe, answered 402. A payment may carry a payment identifier (extensions[\"payment-identifier\"].info.id): "+
			"the same payment for the same body sent again gets the first answer, paid once. MCP tool: %s.", o.Tool),
		"security": public,
		"x-payment-info": obj{
			"price":     obj{"mode": "fixed", "currency": "USD", "amount": o.USDC},
			"protocols": []any{obj{"x402": obj{}}},
		},
		"parameters": []any{obj{"name": x402.HeaderPaymentSignature, "in": "header", "required": false,
			"description": "The payment (base64 JSON, x402 v2 PaymentPayload), signed for one of the 402's requirements.", "schema": obj{"type": "string"}}},
		// Not required: an empty body with no payment is a probe (402).
		"requestBody": obj{"required": false, "content": jsonBody(ref("PaidQuery"))},
		"responses": obj{
			"200": obj{"description": "Paid: the verdict.", "headers": obj{x402.HeaderPaymentResponse: header(payment, true)},
				"content": jsonBody(ref("VerdictAnswer"))},
			"202": obj{"description": "Paid: the verdict is being prepared; poll the Location (free).",
				"headers": obj{"Location": header("Where to poll: GET /x402/result/{id}.", true), "Retry-After": header("Seconds to wait.", false),
					x402.HeaderPaymentResponse: header(payment, false)},
				"content": jsonBody(ref("PendingAnswer"))},
			"400": errorAnswer("The body is not {\"query\": \"...\"} with a valid query, or the payment header cannot be read."),
			"402": obj{"description": "Payment required, or the payment sent was refused (error says why).",
				"headers": obj{x402.HeaderPaymentRequired: header("What to pay (base64 JSON, x402 v2 PaymentRequired): the body's JSON.", true)},
				"content": jsonBody(obj{"allOf": []any{ref("PaymentRequired"), priced(s, o.Tier)}})},
			"409": errorAnswer("The payment identifier was used with another payment or body: nothing is charged."),
			"413": errorAnswer("The body or the query is too long."),
			"500": errorAnswer("An internal error."),
			"503": errorAnswer("The facilitator or the store cannot be reached: nothing was settled, or the settlement is being confirmed."),
		},
	}
}

// priced pins a 402's requirements to the tier's price, the wallet paid
// and the networks offered.
func priced(s site, tier oracle.Tier) obj {
	payTo := s.PayTo
	if sum, err := x402.ChecksumAddress(payTo); err == nil {
		payTo = sum
	}
	var networks []string
	for _, n := range s.Networks {
		networks = append(networks, string(n.Network))
	}
	return obj{"properties": obj{"accepts": obj{"minItems": 1, "items": obj{"properties": obj{
		"amount":  obj{"const": strconv.FormatInt(tier.PriceUSDCAtomic(), 10)},
		"payTo":   obj{"const": payTo},
		"network": obj{"enum": networks},
	}}}}}
}

// mcpPaths is the MCP server's endpoint, briefly: JSON-RPC 2.0 over Streamable
// HTTP; its tools are listed by tools/list.
func mcpPaths() obj {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return obj{
		"post": obj{"operationId": "mcp", "tags": []string{"mcp"}, "security": public,
			"summary": "The MCP server (Streamable HTTP, stateless, JSON answers)",
			"description": fmt.Sprintf("JSON-RPC 2.0 messages of the Model Context Protocol. Tools: %v. A paid tool follows x402's MCP transport: "+
				"unpaid, a result with isError and the PaymentRequired in structuredContent; paid through _meta[\"x402/payment\"].", names),
			"requestBody": obj{"required": true, "content": jsonBody(ref("JSONRPCMessage"))},
			"responses": obj{
				"200": answer("The JSON-RPC response.", ref("JSONRPCMessage")),
				"202": obj{"description": "A notification or a response, accepted."},
				"400": answer("Not a JSON-RPC message this server takes.", ref("JSONRPCMessage")),
			}},
		"get": obj{"operationId": "mcpStream", "tags": []string{"mcp"}, "security": public, "summary": "No server-sent stream: 405",
			"responses": obj{"405": obj{"description": "This server answers POST only."}}},
	}
}

// chatPaths are Sisters Chat's public routes (the chat function).
func chatPaths() obj {
	sameSite := "Changes something: sent from the site's own page (Content-Type: application/json, the site's Origin or Sec-Fetch-Site: same-origin), else 403."
	signed := func(id, summary string, ok obj, extra obj) obj {
		r := obj{
			"200": ok,
			"401": answer("Not signed in, or the session has ended (the cookie is cleared).", ref("Error")),
			"403": errorAnswer("Not from the site's own page."),
			"503": errorAnswer("The chat cannot be reached: try again."),
		}
		for k, v := range extra {
			r[k] = v
		}
		return obj{"operationId": id, "tags": []string{"chat"}, "summary": summary, "security": signedIn, "responses": r}
	}
	// A route that reads no body (schema nil) may send none: only its
	// Content-Type is checked.
	withBody := func(op obj, schema obj) obj {
		if schema == nil {
			op["requestBody"] = obj{"required": false, "content": jsonBody(obj{"type": "object"})}
		} else {
			op["requestBody"] = obj{"required": true, "content": jsonBody(schema)}
		}
		op["description"] = sameSite
		return op
	}
	urlAnswer := answer("Where to go: Stripe's page.", obj{"type": "object", "required": []string{"url"}, "properties": obj{"url": obj{"type": "string", "format": "uri"}}})
	return obj{
		"/chat": obj{
			"get":  obj{"operationId": "chatPage", "tags": []string{"chat"}, "summary": "Sisters Chat's page (HTML)", "security": public, "responses": obj{"200": page("The chat.")}},
			"head": obj{"operationId": "chatPageHead", "tags": []string{"chat"}, "summary": "Sisters Chat's page, headers only", "security": public, "responses": obj{"200": obj{"description": "The chat."}}},
		},
		"/chat/signin": obj{
			"get": obj{"operationId": "signInLink", "tags": []string{"chat"}, "security": public,
				"summary":    "The emailed sign-in link's page (HTML): one button; opening it spends nothing",
				"parameters": []any{obj{"name": "token", "in": "query", "required": false, "schema": obj{"type": "string"}}},
				"responses":  obj{"200": page("The button."), "400": page("The link is not valid.")}},
			"post": obj{"operationId": "signIn", "tags": []string{"chat"}, "security": public,
				"summary":     "The sign-in page's button: spends the link, sets the session cookie",
				"description": "From the site's own sign-in page only.",
				"requestBody": obj{"required": true, "content": obj{"application/x-www-form-urlencoded": obj{"schema": obj{
					"type": "object", "required": []string{"token"}, "properties": obj{"token": obj{"type": "string"}}}}}},
				"responses": obj{
					"303": obj{"description": "Signed in: to /chat, with the session cookie.",
						"headers": obj{"Location": header("/chat", true), "Set-Cookie": header("The session cookie.", true)}},
					"400": page("The link is not valid."), "403": page("Not from the site's own page."), "410": page("The link was used or has expired."),
					"413": page("The form is too large."), "415": page("Not the sign-in page's form."), "503": page("Try again in a moment."),
				}},
		},
		"/api/chat/signin": obj{"post": withBody(obj{"operationId": "requestSignIn", "tags": []string{"chat"}, "security": public,
			"summary": "Email a sign-in link: the same answer whether or not the address has an account",
			"responses": obj{
				"202": answer("Sent, or not: the answer says nothing about the address.", obj{"type": "object", "required": []string{"status"}, "properties": obj{"status": obj{"const": "sent"}}}),
				"400": errorAnswer("The address is not one we can send to."), "403": errorAnswer("Not from the site's own page."),
				"413": errorAnswer("The body is too long."), "429": errorAnswer("Too many requests from here: wait an hour."),
				"503": errorAnswer("Try again in a moment."),
			}}, ref("SignInRequest"))},
		"/api/chat": obj{
			"get": signed("conversation", "The signed-in address, the conversation and what is left", answer("The account's chat.", ref("ChatConversation")), nil),
			"post": withBody(signed("message", "Send a message: the Oracle's reply", answer("The reply.", ref("ChatReply")), obj{
				"400": errorAnswer("The message is missing, empty or too long."),
				"402": answer("The free exchanges are used (trial_used) or new trials are paused today (trials_paused): subscribe.", ref("Error")),
				"413": errorAnswer("The body is too long."),
				"429": errorAnswer("Today's exchanges are used (a subscriber's daily cap)."),
			}), ref("MessageRequest")),
			"delete": withBody(signed("forget", "Delete every message of the conversation",
				answer("How many were deleted.", obj{"type": "object", "required": []string{"forgotten"}, "properties": obj{"forgotten": obj{"type": "integer", "minimum": 0}}}), nil), nil),
		},
		"/api/chat/subscribe": obj{"post": withBody(signed("subscribe", "Subscribe: a Stripe Checkout page for the monthly plan", urlAnswer, obj{
			"409": answer("Already subscribed: the portal's link, when there is one.", ref("Error")),
			"500": errorAnswer("Stripe answered an unusable address."),
		}), nil)},
		"/api/chat/portal": obj{"post": withBody(signed("portal", "Manage or cancel the subscription: Stripe's customer portal", urlAnswer, obj{
			"404": errorAnswer("There is no subscription to manage yet."),
			"500": errorAnswer("Stripe answered an unusable address."),
		}), nil)},
		"/api/chat/signout": obj{"post": withBody(signed("signOut", "Sign out everywhere",
			answer("Signed out; the cookie is cleared.", obj{"type": "object", "required": []string{"signed_out"}, "properties": obj{"signed_out": obj{"const": true}}}), nil), nil)},
		"/api/chat/account": obj{"delete": withBody(signed("erase", "Erase the account: the address, the conversation, the links; a subscription is cancelled at once",
			answer("Erased.", obj{"type": "object", "required": []string{"erased"}, "properties": obj{"erased": obj{"const": true}}}), nil), nil)},
	}
}

// schemas are the document's components.
func schemas(s site) obj {
	tiers := make([]string, 0, 3)
	var matching []any
	for _, t := range oracle.Tiers() {
		tiers = append(tiers, string(t))
		matching = append(matching, obj{
			"if":   obj{"required": []string{"tier", "verdict"}, "properties": obj{"tier": obj{"const": string(t)}}},
			"then": obj{"properties": obj{"verdict": ref(verdictName(t))}},
		})
	}
	states := []string{"ready", "pending", "preparing_again", "under_review", "payment_unconfirmed", "failed", "dropped", "refunded", "expired"}
	str := obj{"type": "string"}
	stamp := obj{"type": "string", "format": "date-time"}
	out := obj{
		"Error": obj{"type": "object", "required": []string{"error"}, "description": "A refusal: error says why (a code word for the chat's 402s).",
			"properties": obj{"error": str}},
		"Tier":  obj{"type": "string", "enum": tiers, "description": "quick (Quick Take), full (Full Breakdown) or strategy (Strategy Session)."},
		"Query": querySchema(),
		"Verdict": obj{"description": "A verdict as stored: one of the three tiers' shapes.",
			"oneOf": []any{ref(verdictName(oracle.TierQuick)), ref(verdictName(oracle.TierFull)), ref(verdictName(oracle.TierStrategy))}},
		"CheckoutRequest": obj{"type": "object", "required": []string{"tier", "query"}, "properties": obj{
			"tier":          ref("Tier"),
			"query":         ref("Query"),
			"referral_code": obj{"type": "string", "pattern": `^[A-Za-z0-9_-]{0,64}$`},
		}},
		"OrderState": obj{"type": "object", "required": []string{"status"}, "allOf": matching,
			"description": "An order's state; with status ready, its verdict in the tier's shape.",
			"properties": obj{
				"status": obj{"type": "string", "enum": states}, "tier": ref("Tier"), "tier_name": str, "query": str,
				"verdict": ref("Verdict"), "cached_at": stamp, "retention_days": obj{"type": "integer", "minimum": 0},
				"message": str, "error": str, "regen": obj{"type": "boolean"}, "regen_reason": str, "regenerated_at": stamp,
				"divergence": str, "original_verdict": str, "divergence_notice": obj{"type": "boolean"}, "email": str,
			}},
		"Health": obj{"type": "object", "required": []string{"status"}, "properties": obj{
			"status": obj{"type": "string", "enum": []string{"ok", "warn", "critical"}},
			"at":     stamp,
			"checks": obj{"type": "object", "additionalProperties": obj{"type": "string", "enum": []string{"ok", "warn", "critical"}}},
			"stale":  obj{"type": "boolean"},
			"error":  str,
		}},
		"SignInRequest":  obj{"type": "object", "required": []string{"email"}, "properties": obj{"email": obj{"type": "string", "maxLength": 254}}},
		"MessageRequest": obj{"type": "object", "required": []string{"message"}, "properties": obj{"message": str}},
		"ChatSubscription": obj{"type": []string{"object", "null"}, "properties": obj{
			"status": str, "active": obj{"type": "boolean"}, "current_period_end": stamp, "cancel_at_period_end": obj{"type": "boolean"},
			"left_today": obj{"type": "integer"}, "daily_cap": obj{"type": "integer"}, "manage": obj{"type": "boolean"},
		}},
		"ChatReply": obj{"type": "object", "required": []string{"reply", "plan"}, "properties": obj{
			"reply": str, "plan": str, "counted": obj{"type": "boolean"}, "exchanges_left": obj{"type": "integer"}, "subscription": ref("ChatSubscription"),
		}},
		"ChatConversation": obj{"type": "object", "required": []string{"address", "messages"}, "properties": obj{
			"address": str,
			"messages": obj{"type": "array", "items": obj{"type": "object", "required": []string{"role", "text", "at"},
				"properties": obj{"role": str, "text": str, "at": stamp}}},
			"exchanges_left": obj{"type": "integer"}, "trial_exchanges": obj{"type": "integer"}, "subscription": ref("ChatSubscription"),
			"max_message": obj{"type": "integer"},
		}},
	}
	for _, t := range oracle.Tiers() {
		out[verdictName(t)] = verdictSchema(t)
	}
	if !s.rail() {
		return out
	}
	out["PaidQuery"] = paidBodySchema()
	out["VerdictAnswer"] = obj{"type": "object", "required": []string{"status", "order_id", "tier", "verdict", "result_url"}, "allOf": matching,
		"properties": obj{
			"status": obj{"const": "ready"}, "order_id": obj{"type": "string", "pattern": agentOrderPattern}, "tier": ref("Tier"), "tier_name": str,
			"query": str, "verdict": ref("Verdict"), "cached_at": stamp, "retention_days": obj{"type": "integer"},
			"result_url": obj{"type": "string", "format": "uri"},
		}}
	out["PendingAnswer"] = obj{"type": "object", "required": []string{"status", "order_id", "poll_url"}, "properties": obj{
		"status": str, "order_id": obj{"type": "string", "pattern": agentOrderPattern}, "message": str,
		"poll_url": obj{"type": "string", "format": "uri"}, "result_url": obj{"type": "string", "format": "uri"},
	}}
	out["PaymentRequired"] = obj{"type": "object", "required": []string{"x402Version", "accepts"}, "description": "x402 v2's PaymentRequired.",
		"properties": obj{
			"x402Version": obj{"const": x402.Version},
			"error":       str,
			"resource": obj{"type": "object", "required": []string{"url"}, "properties": obj{
				"url": obj{"type": "string", "format": "uri"}, "description": str, "mimeType": str,
				"serviceName": obj{"type": "string", "maxLength": 32}, "iconUrl": obj{"type": "string", "format": "uri", "maxLength": 2048},
				"tags": obj{"type": "array", "maxItems": 5, "items": obj{"type": "string", "maxLength": 32}},
			}},
			"accepts": obj{"type": "array", "items": obj{"type": "object",
				"required": []string{"scheme", "network", "asset", "amount", "payTo", "maxTimeoutSeconds"},
				"properties": obj{
					"scheme": obj{"const": x402.SchemeExact}, "network": str, "asset": str,
					"amount": obj{"type": "string", "pattern": `^[0-9]+$`, "description": "In the asset's atomic units (USDC: 6 decimals)."},
					"payTo":  str, "maxTimeoutSeconds": obj{"type": "integer", "minimum": 1}, "extra": obj{"type": "object"},
				}}},
			"extensions": obj{"type": "object"},
		}}
	out["X402Discovery"] = obj{"type": "object", "required": []string{"version", "resources"}, "properties": obj{
		"version":      obj{"const": 1},
		"resources":    obj{"type": "array", "items": obj{"type": "string", "format": "uri"}},
		"instructions": str,
		"mcp": obj{"type": "object", "required": []string{"url", "transport", "tools"}, "properties": obj{
			"url": obj{"type": "string", "format": "uri"}, "transport": obj{"const": "streamable-http"},
			"tools": obj{"type": "array", "items": str},
		}},
		"openapi": obj{"type": "string", "format": "uri"},
		"llmsTxt": obj{"type": "string", "format": "uri"},
	}}
	out["JSONRPCMessage"] = obj{"type": "object", "required": []string{"jsonrpc"}, "properties": obj{
		"jsonrpc": obj{"const": "2.0"}, "id": obj{"type": []string{"string", "integer", "null"}}, "method": str,
		"params": obj{"type": "object"}, "result": obj{"type": "object"}, "error": obj{"type": "object"},
	}}
	return out
}

func verdictName(t oracle.Tier) string {
	switch t {
	case oracle.TierFull:
		return "VerdictFull"
	case oracle.TierStrategy:
		return "VerdictStrategy"
	}
	return "VerdictQuick"
}
