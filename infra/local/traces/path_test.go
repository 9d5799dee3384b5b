package traces

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// order builds an order's spans as the functions export them; times are
// in milliseconds from the order's start.
type order struct {
	spans []Span
	n     int
}

const (
	orderTrace   = "0000000000000000000000000000000a"
	webhookTrace = "0000000000000000000000000000000b"
)

// span adds a span under parent (empty: a root) and returns its id.
func (o *order) span(trace, parent, service, name, kind string, from, to float64, attrs map[string]any) string {
	o.n++
	id := fmt.Sprintf("%016x", o.n)
	o.spans = append(o.spans, Span{TraceID: trace, SpanID: id, ParentSpanID: parent, Name: name, Service: service, Kind: kind,
		Start: uint64(from * 1e6), End: uint64(to * 1e6), Attributes: attrs, Status: Status{Code: "unset"}})
	return id
}

// call adds an AWS call ("DynamoDB.GetItem") as shared/tracing makes it.
func (o *order) call(trace, parent, service, kind string, from, to float64) string {
	svc, op, _ := strings.Cut(kind, ".")
	return o.span(trace, parent, service, kind, "client", from, to, map[string]any{attrRPCSystem: rpcSystemAWS, attrRPCService: svc, attrRPCMethod: op})
}

// send adds a job's send (the producer span and its SendMessage) and
// returns the producer's id, the next function's parent.
func (o *order) send(trace, parent, service, queue string, from, to float64) string {
	p := o.span(trace, parent, service, "send "+queue, "producer", from, to, map[string]any{"messaging.system": "aws_sqs"})
	o.call(trace, p, service, "SQS.SendMessage", from+0.1, to-0.1)
	return p
}

// link makes the span id of trace link to target.
func (o *order) link(trace, id string, target Link) {
	for i := range o.spans {
		if o.spans[i].TraceID == trace && o.spans[i].SpanID == id {
			o.spans[i].Links = append(o.spans[i].Links, target)
		}
	}
}

// webhook is today's webhook: its own trace (Stripe's request) reads the
// Ledger, then the claim continues the order's trace under the checkout's
// span, linked to its invocation; JobEnqueued, the audit record and the
// Ledger's mark follow the send. It returns the send's span.
func (o *order) webhook() string {
	checkout := o.span(orderTrace, "", "checkout", "checkout", "server", 0, 5, nil)
	o.call(orderTrace, checkout, "checkout", "DynamoDB.PutItem", 1, 2)
	inv := o.span(webhookTrace, "", "webhook", "webhook", "server", 10, 40, nil)
	o.call(webhookTrace, inv, "webhook", "DynamoDB.GetItem", 11, 13)
	claim := o.span(orderTrace, checkout, "webhook", "checkout.session.completed", "internal", 14, 39, nil)
	o.link(orderTrace, claim, Link{TraceID: webhookTrace, SpanID: inv})
	o.call(orderTrace, claim, "webhook", "DynamoDB.PutItem", 15, 17)
	sent := o.send(orderTrace, claim, "webhook", "GenerateQueue", 18, 20)
	o.call(orderTrace, claim, "webhook", "DynamoDB.UpdateItem", 21, 23)
	o.call(orderTrace, claim, "webhook", "S3.PutObject", 24, 26)
	o.call(orderTrace, claim, "webhook", "DynamoDB.PutItem", 27, 29)
	return sent
}

// generator is today's generator under the job sent: ten calls one after
// another and the model between them; it returns the mail job's send.
func (o *order) generator(sent string) string {
	inv := o.span(orderTrace, sent, "generator", "generator", "consumer", 30, 80, nil)
	proc := o.span(orderTrace, inv, "generator", "process GenerateQueue", "consumer", 31, 79, nil)
	at := 32.0
	for _, k := range []string{"DynamoDB.GetItem", "DynamoDB.GetItem", "DynamoDB.UpdateItem"} {
		o.call(orderTrace, proc, "generator", k, at, at+2)
		at += 3
	}
	o.span(orderTrace, proc, "generator", "gemini POST", "client", at, at+5, map[string]any{"http.request.method": "POST"})
	at += 6
	for _, k := range []string{"S3.PutObject", "DynamoDB.GetItem", "S3.PutObject", "DynamoDB.UpdateItem", "S3.PutObject", "DynamoDB.UpdateItem"} {
		o.call(orderTrace, proc, "generator", k, at, at+2)
		at += 3
	}
	return o.send(orderTrace, proc, "generator", "MailQueue", at, at+2)
}

// mailer is today's mailer: it returns its invocation's span.
func (o *order) mailer(sent string, from float64) string {
	inv := o.span(orderTrace, sent, "mailer", "mailer", "consumer", from, from+40, nil)
	at := from + 1
	for _, k := range []string{"DynamoDB.GetItem", "DynamoDB.UpdateItem", "S3.PutObject"} {
		o.call(orderTrace, inv, "mailer", k, at, at+2)
		at += 3
	}
	o.span(orderTrace, inv, "mailer", "stripe GET", "client", at, at+4, map[string]any{"http.request.method": "GET"})
	at += 5
	o.call(orderTrace, inv, "mailer", "DynamoDB.GetItem", at, at+2)
	o.call(orderTrace, inv, "mailer", "SESv2.SendEmail", at+3, at+5)
	// MailSent's update and the attempt's record follow the send.
	o.call(orderTrace, inv, "mailer", "DynamoDB.UpdateItem", at+6, at+8)
	o.call(orderTrace, inv, "mailer", "S3.PutObject", at+9, at+11)
	return inv
}

// today is a whole order as today's functions make it.
func today() *order {
	o := &order{}
	o.mailer(o.generator(o.webhook()), 100)
	return o
}

// without is o without the spans whose name is name (the n-th of them,
// counting from 1).
func without(o *order, name string, n int) *order {
	seen := 0
	out := &order{n: o.n}
	for _, sp := range o.spans {
		if sp.Name == name {
			if seen++; seen == n {
				continue
			}
		}
		out.spans = append(out.spans, sp)
	}
	return out
}

// each weighs every call 1: the path's round trips.
func each(string) float64 { return 1 }

func TestCriticalPathCountsTheCallsWaitedFor(t *testing.T) {
	wantToday := [][]string{
		{"DynamoDB.GetItem", "DynamoDB.PutItem", "SQS.SendMessage"},
		{ReceiveKind},
		{"DynamoDB.GetItem", "DynamoDB.GetItem", "DynamoDB.UpdateItem", "S3.PutObject", "DynamoDB.GetItem", "S3.PutObject", "DynamoDB.UpdateItem", "S3.PutObject", "DynamoDB.UpdateItem", "SQS.SendMessage"},
		{ReceiveKind},
		{"DynamoDB.GetItem", "DynamoDB.UpdateItem", "S3.PutObject", "DynamoDB.GetItem", "SESv2.SendEmail"},
	}
	for _, c := range []struct {
		name  string
		spans func() []Span
		trips int
		// chains are the kinds on the path, leg by leg with the hops
		// between them; nil: not checked.
		chains [][]string
	}{
		{"today's order: 20 round trips, the calls after each hand-off left out", func() []Span { return today().spans }, 20, wantToday},
		{"the spans in any order", func() []Span {
			s := today().spans
			slices.Reverse(s)
			return s
		}, 20, wantToday},
		{"the Ledger's read folded into the claim", func() []Span { return without(today(), "DynamoDB.GetItem", 1).spans }, 19, nil},
		{"the mailer's read of the Ledger beside its claim: one wait", func() []Span {
			o := &order{}
			inv := o.mailer(o.generator(o.webhook()), 100)
			o.call(orderTrace, inv, "mailer", "DynamoDB.GetItem", 104.5, 106)
			o = without(o, "DynamoDB.GetItem", 6)
			return o.spans
		}, 19, nil},
		{"the generator's audit records after its send, concurrently", func() []Span {
			o := &order{}
			proc := o.span(orderTrace, o.webhook(), "generator", "generator", "consumer", 30, 60, nil)
			o.call(orderTrace, proc, "generator", "DynamoDB.UpdateItem", 31, 33)
			o.call(orderTrace, proc, "generator", "DynamoDB.UpdateItem", 34, 36)
			sent := o.send(orderTrace, proc, "generator", "MailQueue", 37, 39)
			for range 4 {
				o.call(orderTrace, proc, "generator", "S3.PutObject", 40, 43)
			}
			o.mailer(sent, 100)
			return o.spans
		}, 3 + 1 + 3 + 1 + 5, [][]string{wantToday[0], {ReceiveKind}, {"DynamoDB.UpdateItem", "DynamoDB.UpdateItem", "SQS.SendMessage"}, {ReceiveKind}, wantToday[4]}},
		{"a record started beside the send is not waited for", func() []Span {
			o := &order{}
			proc := o.span(orderTrace, o.webhook(), "generator", "generator", "consumer", 30, 60, nil)
			o.call(orderTrace, proc, "generator", "DynamoDB.UpdateItem", 31, 33)
			o.call(orderTrace, proc, "generator", "S3.PutObject", 34, 40)
			sent := o.send(orderTrace, proc, "generator", "MailQueue", 34, 36)
			o.mailer(sent, 100)
			return o.spans
		}, 3 + 1 + 2 + 1 + 5, nil},
		{"concurrent calls overlapping in a chain: the longest sequence of them", func() []Span {
			// A [31,35] overlaps B [34,38] and C [36,40] overlaps B, but C
			// starts after A ends: A then C is two waits.
			o := &order{}
			proc := o.span(orderTrace, o.webhook(), "generator", "generator", "consumer", 30, 60, nil)
			o.call(orderTrace, proc, "generator", "S3.PutObject", 31, 35)
			o.call(orderTrace, proc, "generator", "S3.PutObject", 34, 38)
			o.call(orderTrace, proc, "generator", "S3.PutObject", 36, 40)
			sent := o.send(orderTrace, proc, "generator", "MailQueue", 41, 43)
			o.mailer(sent, 100)
			return o.spans
		}, 3 + 1 + 3 + 1 + 5, nil},
		{"a mailer's invocation whose send failed, before the one that sent", func() []Span {
			o := &order{}
			sent := o.generator(o.webhook())
			failed := o.span(orderTrace, sent, "mailer", "mailer", "consumer", 82, 95, nil)
			o.call(orderTrace, failed, "mailer", "DynamoDB.GetItem", 83, 85)
			o.call(orderTrace, failed, "mailer", "DynamoDB.UpdateItem", 86, 88)
			o.call(orderTrace, failed, "mailer", "SESv2.SendEmail", 89, 91)
			o.spans[len(o.spans)-1].Status.Code = "error"
			o.mailer(sent, 100)
			return o.spans
		}, 20, wantToday},
		{"a Stripe event delivered twice: the second webhook's calls are not the order's path", func() []Span {
			o := today()
			again := o.span("0000000000000000000000000000000c", "", "webhook", "webhook", "server", 50, 60, nil)
			o.call("0000000000000000000000000000000c", again, "webhook", "DynamoDB.GetItem", 51, 53)
			return o.spans
		}, 20, wantToday},
		{"an agent's paid request: no queue before it", func() []Span {
			o := &order{}
			inv := o.span(orderTrace, "", "agent", "agent", "server", 0, 30, nil)
			o.call(orderTrace, inv, "agent", "DynamoDB.PutItem", 1, 3)
			o.call(orderTrace, inv, "agent", "DynamoDB.UpdateItem", 4, 6)
			o.mailer(o.generator(o.send(orderTrace, inv, "agent", "GenerateQueue", 7, 9)), 100)
			return o.spans
		}, 3 + 1 + 10 + 1 + 5, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := CriticalPath(c.spans())
			if err != nil {
				t.Fatal(err)
			}
			trips, chains := p.Longest(each)
			if int(trips) != c.trips {
				t.Errorf("%v round trips, want %d: %v", trips, c.trips, chains)
			}
			if c.chains != nil && !slices.EqualFunc(chains, c.chains, slices.Equal) {
				t.Errorf("the path is\n%v\nwant\n%v", chains, c.chains)
			}
			if p.Hops() != 2 {
				t.Errorf("%d hops, want 2", p.Hops())
			}
		})
	}
}

// The floor weighs each wait by its slowest call: two calls in flight
// together cost the longer one's round trip, once.
func TestCriticalPathWeighsAWaitByItsSlowestCall(t *testing.T) {
	o := &order{}
	inv := o.mailer(o.generator(o.webhook()), 100)
	// The mailer's read of the Ledger (GetItem) beside its claim's
	// UpdateItem; today's read before the send goes.
	o.call(orderTrace, inv, "mailer", "DynamoDB.GetItem", 104.5, 106)
	o = without(o, "DynamoDB.GetItem", 6)
	p, err := CriticalPath(o.spans)
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]float64{"DynamoDB.GetItem": 3, "DynamoDB.UpdateItem": 7, "DynamoDB.PutItem": 4, "S3.PutObject": 5,
		"SQS.SendMessage": 2, ReceiveKind: 6, "SESv2.SendEmail": 8}
	floor, _ := p.Longest(func(k string) float64 { return ms[k] })
	// webhook 3+4+2, hop 6, generator 3+3+7+5+3+5+7+5+7+2, hop 6, mailer
	// 3+7 (the read beside it)+5+8.
	if want := 9.0 + 6 + 47 + 6 + 23; floor != want {
		t.Errorf("floor %v, want %v", floor, want)
	}
}

func TestCriticalPathRefusesATraceNotWhole(t *testing.T) {
	for _, c := range []struct {
		name  string
		spans []Span
		says  string
	}{
		{"no email sent yet", without(today(), "SESv2.SendEmail", 1).spans, "no email sent"},
		{"the webhook's own trace not received", without(today(), "webhook", 1).spans, "links to"},
		{"the generator's invocation not received", without(today(), "generator", 1).spans, "was not received"},
		{"a send without its request", without(today(), "SQS.SendMessage", 2).spans, "no AWS call under the send"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := CriticalPath(c.spans); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %v, want one that says %q", err, c.says)
			}
		})
	}
}

// A failed send is no email: an order whose every send failed has no path.
func TestCriticalPathNeedsASendThatWent(t *testing.T) {
	o := today()
	for i := range o.spans {
		if o.spans[i].Name == "SESv2.SendEmail" {
			o.spans[i].Status.Code = "error"
		}
	}
	if _, err := CriticalPath(o.spans); err == nil {
		t.Fatal("a path to a failed send")
	}
}

// Spans whose parents loop (the receiver takes any exporter's) are
// refused, not followed for ever.
func TestCriticalPathRefusesParentsThatLoop(t *testing.T) {
	o := today()
	for i := range o.spans {
		// The generator's invocation made the child of its own record's
		// processing.
		if o.spans[i].Name == "generator" {
			o.spans[i].ParentSpanID = o.spans[i+1].SpanID
		}
	}
	if _, err := CriticalPath(o.spans); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("error %v, want the loop refused", err)
	}
}
