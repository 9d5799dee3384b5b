package stack_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"42sisters.ai/oracle/infra/local/traces"
)

// Where an order's time goes, read from its spans: the window from the
// payment to the mailer's stamp of the send, cut into the parts that
// follow one another on its path. Each function's part runs from its
// invocation's first span to its hand-off (the next job's send, or the
// email's) and is split into the time its AWS calls were in flight, the
// time its other calls were (the model, Stripe's API: by the peer the
// span names), and the rest, its own work. Between two functions is the
// queue's hop: from the send's answer to the next invocation's first
// span, the event source's receive and the Lambda hand-off. Before the
// first function is the payment's way to it (Stripe's webhook request,
// the gateway, the hand-off); after the email's send, its stamp.

// part is one stretch of an order's window.
type part struct {
	name string
	took time.Duration
}

// orderParts cuts the window from paid to sent of the order whose spans
// are given into its parts, in the order they come.
func orderParts(spans []traces.Span, paid, sent time.Time) ([]part, error) {
	type key struct{ trace, span string }
	byKey := make(map[key]traces.Span, len(spans))
	children := map[key][]traces.Span{}
	for _, sp := range spans {
		byKey[key{sp.TraceID, sp.SpanID}] = sp
		if sp.ParentSpanID != "" {
			p := key{sp.TraceID, sp.ParentSpanID}
			children[p] = append(children[p], sp)
		}
	}
	parent := func(sp traces.Span) (traces.Span, bool) {
		p, ok := byKey[key{sp.TraceID, sp.ParentSpanID}]
		return p, ok && sp.ParentSpanID != ""
	}
	// under is every client span of sp's function in sp's subtree.
	var under func(sp traces.Span, out []traces.Span) []traces.Span
	under = func(sp traces.Span, out []traces.Span) []traces.Span {
		if sp.Kind == "client" {
			out = append(out, sp)
		}
		for _, c := range children[key{sp.TraceID, sp.SpanID}] {
			if c.Service == sp.Service {
				out = under(c, out)
			}
		}
		return out
	}
	var handOff traces.Span
	for _, sp := range spans {
		if sp.Name == "SESv2.SendEmail" && sp.Status.Code != "error" && (handOff.SpanID == "" || sp.End < handOff.End) {
			handOff = sp
		}
	}
	if handOff.SpanID == "" {
		return nil, fmt.Errorf("no email sent among the order's %d spans", len(spans))
	}
	parts := []part{{"the send to its stamp", time.Duration(sent.UnixNano() - int64(handOff.End))}}
	for range 10 {
		root := handOff
		for p, ok := parent(root); ok && p.Service == root.Service; p, ok = parent(root) {
			root = p
		}
		start, calls := root.Start, under(root, nil)
		// The webhook's first calls are in its own trace, linked.
		for _, l := range root.Links {
			if linked, ok := byKey[key{l.TraceID, l.SpanID}]; ok && linked.Service == root.Service {
				start, calls = min(start, linked.Start), under(linked, calls)
			}
		}
		parts = append(parts, legParts(root.Service, start, handOff.End, calls)...)
		send, ok := parent(root)
		if !ok || send.Kind != "producer" {
			parts = append(parts, part{"the payment to the " + root.Service, time.Duration(int64(start) - paid.UnixNano())})
			slices.Reverse(parts)
			return parts, nil
		}
		sends := under(send, nil)
		if len(sends) == 0 {
			return nil, fmt.Errorf("%s %q: no call under the send that handed %s its job", send.Service, send.Name, root.Service)
		}
		handOff = slices.MaxFunc(sends, func(a, b traces.Span) int { return cmp.Compare(a.End, b.End) })
		parts = append(parts, part{"the queue to the " + root.Service, time.Duration(root.Start - handOff.End)})
	}
	return nil, fmt.Errorf("more than 10 functions on the path: its spans loop")
}

// legParts splits one function's stretch [from, to] by what its calls
// were doing: its AWS calls, its other calls by peer, its own work, given
// in reverse as orderParts gathers the path from its end. Where calls
// overlap, the time is the AWS calls', then the first peer's by name.
func legParts(service string, from, to uint64, calls []traces.Span) []part {
	var aws [][2]uint64
	peers := map[string][][2]uint64{}
	for _, c := range calls {
		iv := [2]uint64{max(c.Start, from), min(c.End, to)}
		if iv[0] >= iv[1] {
			continue
		}
		if c.Attributes["rpc.system"] == "aws-api" {
			aws = append(aws, iv)
		} else {
			peer, _, _ := strings.Cut(c.Name, " ")
			peers[peer] = append(peers[peer], iv)
		}
	}
	covered := union(aws)
	out := []part{{service + ": AWS calls", time.Duration(covered)}}
	all := aws
	for _, peer := range slices.Sorted(maps.Keys(peers)) {
		all = append(all, peers[peer]...)
		more := union(all)
		out = append(out, part{service + ": " + peer, time.Duration(more - covered)})
		covered = more
	}
	out = append(out, part{service + ": own work", time.Duration(to - from - covered)})
	slices.Reverse(out)
	return out
}

// union is the time the intervals cover together.
func union(ivs [][2]uint64) uint64 {
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var total, end uint64
	for _, iv := range ivs {
		if iv[1] <= end {
			continue
		}
		total += iv[1] - max(iv[0], end)
		end = iv[1]
	}
	return total
}

// breakdown gathers the orders' parts.
type breakdown struct {
	names []string
	took  map[string][]time.Duration
	// aws is each order's AWS calls on its path, all legs together.
	aws []time.Duration
}

func (b *breakdown) add(parts []part) {
	if b.took == nil {
		b.took = map[string][]time.Duration{}
	}
	var aws time.Duration
	for _, p := range parts {
		if _, ok := b.took[p.name]; !ok {
			b.names = append(b.names, p.name)
		}
		b.took[p.name] = append(b.took[p.name], p.took)
		if strings.HasSuffix(p.name, ": AWS calls") {
			aws += p.took
		}
	}
	b.aws = append(b.aws, aws)
}

// report gives each part's median and p95 over the orders, in ms, and the
// AWS calls on the path against the floor, their time uncontended.
func (b *breakdown) report(floor time.Duration) string {
	var out []string
	for _, name := range b.names {
		took := slices.Sorted(slices.Values(b.took[name]))
		out = append(out, fmt.Sprintf("%s %.1f/%.1f", name, ms(took[len(took)/2]), ms(percentile95(took))))
	}
	aws := slices.Sorted(slices.Values(b.aws))
	return fmt.Sprintf("%s; the AWS calls on the path together %.1f/%.1f against the floor's %.1f", strings.Join(out, ", "),
		ms(aws[len(aws)/2]), ms(percentile95(aws)), ms(floor))
}
