package traces

import (
	"cmp"
	"fmt"
	"slices"
)

// The critical path of an order, counted from its spans: the AWS calls
// each function waited for before its next step, from the payment's
// first function to the email's send. The pipeline's floor
// (docs/performance.md) is this path's round trips.

// The AWS calls' spans carry these attributes (shared/tracing's AWS).
const (
	attrRPCSystem  = "rpc.system"
	attrRPCService = "rpc.service"
	attrRPCMethod  = "rpc.method"
	rpcSystemAWS   = "aws-api"
)

// ReceiveKind is the round trip of a queue's hop between two functions:
// the event source's receive that returns the job (Lambda's poller, which
// makes no span).
const ReceiveKind = "SQS.ReceiveMessage"

// Call is one AWS call of a function: its kind, the span's name
// ("DynamoDB.GetItem", "S3.PutObject", "SQS.SendMessage",
// "SESv2.SendEmail"), and when it ran (Unix nanoseconds).
type Call struct {
	Kind       string
	Start, End uint64
}

// Leg is one function's part of an order's path.
type Leg struct {
	// Service is the function's (service.name).
	Service string
	// Calls are the invocation's AWS calls made for the order that ended
	// before its hand-off began, by end, and last the hand-off itself: the
	// job's SendMessage to the next function's queue, or the email's send
	// for the path's last function.
	Calls []Call
}

// Path is an order's critical path: its legs in order, a queue's hop
// between each two.
type Path struct {
	Legs []Leg
}

// Hops is how many queues the order crossed on its path.
func (p Path) Hops() int { return max(0, len(p.Legs)-1) }

// Longest is the path's longest wait, weighing each call by weight(kind):
// in each leg the heaviest chain of calls made one after another (each
// beginning once the one before had ended) that ends with the hand-off,
// and each hop as one ReceiveKind. Calls in flight together are one wait:
// no chain holds two of them. With every weight 1 it is the path's round
// trips; with each kind's round trip, its floor. It also returns the
// chain's kinds, leg by leg, with the hops between them.
func (p Path) Longest(weight func(kind string) float64) (float64, [][]string) {
	var sum float64
	var chains [][]string
	for i, leg := range p.Legs {
		if i > 0 {
			sum += weight(ReceiveKind)
			chains = append(chains, []string{ReceiveKind})
		}
		w, chain := leg.longest(weight)
		sum += w
		chains = append(chains, chain)
	}
	return sum, chains
}

// longest is the heaviest chain of calls one after another that ends with
// the leg's last call, its hand-off.
func (l Leg) longest(weight func(kind string) float64) (float64, []string) {
	n := len(l.Calls)
	if n == 0 {
		return 0, nil
	}
	// The calls are by end: a call's predecessors in a chain end before
	// it starts, so they come before it.
	best, prev := make([]float64, n), make([]int, n)
	for i, c := range l.Calls {
		best[i], prev[i] = weight(c.Kind), -1
		for j := range i {
			if l.Calls[j].End <= c.Start && best[j]+weight(c.Kind) > best[i] {
				best[i], prev[i] = best[j]+weight(c.Kind), j
			}
		}
	}
	var chain []string
	for i := n - 1; i >= 0; i = prev[i] {
		chain = append(chain, l.Calls[i].Kind)
	}
	slices.Reverse(chain)
	return best[n-1], chain
}

// spanKey names a span across the order's traces.
type spanKey struct{ trace, span string }

// CriticalPath reads an order's path from its spans (every trace that
// names the order, as Store.Order gives them): it starts at the email's
// send (the first SESv2.SendEmail that succeeded), takes the AWS calls its
// function's invocation made before it, and goes back through the queue
// the invocation was handed its job by: the producer's send span, the
// parent of the consumer's first span, whose SendMessage is the earlier
// function's hand-off. It stops at a function that no queue invoked (the
// webhook, under the checkout's span; the agent). An invocation's calls
// are those under its first span of the order's trace and under the span
// of its own trace that span links to (the webhook's, which reads the
// Ledger before it knows the order). A span referred to but not received
// (the spans of an invocation arrive after its answer) is an error: the
// path would be short.
func CriticalPath(spans []Span) (Path, error) {
	byKey := make(map[spanKey]Span, len(spans))
	children := map[spanKey][]spanKey{}
	for _, sp := range spans {
		k := spanKey{sp.TraceID, sp.SpanID}
		byKey[k] = sp
		if sp.ParentSpanID != "" {
			p := spanKey{sp.TraceID, sp.ParentSpanID}
			children[p] = append(children[p], k)
		}
	}
	parent := func(sp Span) (Span, bool, error) {
		if sp.ParentSpanID == "" {
			return Span{}, false, nil
		}
		p, ok := byKey[spanKey{sp.TraceID, sp.ParentSpanID}]
		if !ok {
			return Span{}, false, fmt.Errorf("%s %q: its parent %s was not received", sp.Service, sp.Name, sp.ParentSpanID)
		}
		return p, true, nil
	}
	// awsUnder is every AWS call of k's function in the subtree of k: a
	// send's subtree holds the next function's invocation too.
	var awsUnder func(k spanKey, out []Span) []Span
	awsUnder = func(k spanKey, out []Span) []Span {
		sp := byKey[k]
		if isAWS(sp) {
			out = append(out, sp)
		}
		for _, c := range children[k] {
			if byKey[c].Service == sp.Service {
				out = awsUnder(c, out)
			}
		}
		return out
	}

	var end Span
	for _, sp := range spans {
		if isAWS(sp) && sp.Attributes[attrRPCService] == "SESv2" && sp.Attributes[attrRPCMethod] == "SendEmail" && sp.Status.Code != "error" &&
			(end.SpanID == "" || sp.End < end.End) {
			end = sp
		}
	}
	if end.SpanID == "" {
		return Path{}, fmt.Errorf("no email sent (SESv2.SendEmail) among the order's %d spans", len(spans))
	}
	var legs []Leg
	handOff := end
	// The receiver takes any exporter's spans: parents that loop are
	// refused rather than followed for ever.
	walked := map[spanKey]bool{}
	for {
		// The invocation's first span of this trace: its topmost ancestor
		// of the same function.
		root := handOff
		for {
			k := spanKey{root.TraceID, root.SpanID}
			if walked[k] {
				return Path{}, fmt.Errorf("%s %q: its ancestors loop", root.Service, root.Name)
			}
			walked[k] = true
			p, ok, err := parent(root)
			if err != nil {
				return Path{}, err
			}
			if !ok || p.Service != root.Service {
				break
			}
			root = p
		}
		calls := awsUnder(spanKey{root.TraceID, root.SpanID}, nil)
		for _, l := range root.Links {
			linked, ok := byKey[spanKey{l.TraceID, l.SpanID}]
			if !ok {
				return Path{}, fmt.Errorf("%s %q: the span it links to (%s in trace %s) was not received", root.Service, root.Name, l.SpanID, l.TraceID)
			}
			if linked.Service == root.Service {
				calls = awsUnder(spanKey{linked.TraceID, linked.SpanID}, calls)
			}
		}
		leg := Leg{Service: root.Service}
		for _, c := range calls {
			if c.End <= handOff.Start {
				leg.Calls = append(leg.Calls, Call{Kind: c.Name, Start: c.Start, End: c.End})
			}
		}
		slices.SortStableFunc(leg.Calls, func(a, b Call) int { return cmp.Compare(a.End, b.End) })
		leg.Calls = append(leg.Calls, Call{Kind: handOff.Name, Start: handOff.Start, End: handOff.End})
		legs = append(legs, leg)

		// The job that invoked this function: its first span's parent, a
		// send of another function's.
		send, ok, err := parent(root)
		if err != nil {
			return Path{}, err
		}
		if !ok || send.Kind != "producer" {
			break
		}
		sent := awsUnder(spanKey{send.TraceID, send.SpanID}, nil)
		if len(sent) == 0 {
			return Path{}, fmt.Errorf("%s %q: no AWS call under the send that handed %s its job", send.Service, send.Name, root.Service)
		}
		// The send's own request; a send retried inside the SDK is one
		// span.
		handOff = slices.MaxFunc(sent, func(a, b Span) int { return cmp.Compare(a.End, b.End) })
	}
	slices.Reverse(legs)
	return Path{Legs: legs}, nil
}

func isAWS(sp Span) bool { return sp.Attributes[attrRPCSystem] == rpcSystemAWS }
