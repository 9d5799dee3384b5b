package stack

import (
	"fmt"

	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/sam"
)

// defaultInstances is the processes per function when Options.Instances
// is not set.
const defaultInstances = 2

// concurrency is how much of a function runs at once, as Lambda would let
// it: reserved is its ReservedConcurrentExecutions (0: none), and
// maximum, by queue, its SQS event sources' ScalingConfig.MaximumConcurrency
// (0: none), Options.MaximumConcurrency overriding the template's.
type concurrency struct {
	reserved int
	maximum  map[string]int
}

func concurrencyOf(o *Options, b *backend, fn sam.Function) (concurrency, error) {
	c := concurrency{maximum: map[string]int{}}
	var err error
	if c.reserved, err = b.template.ResolveInt(fn.ReservedConcurrency, b.resources.Values); err != nil {
		return c, fmt.Errorf("%s: ReservedConcurrentExecutions: %w", fn.LogicalID, err)
	}
	for _, q := range fn.Queues {
		if c.maximum[q.QueueLogicalID], err = b.template.ResolveInt(q.MaximumConcurrency, b.resources.Values); err != nil {
			return c, fmt.Errorf("%s: %s's MaximumConcurrency: %w", fn.LogicalID, q.QueueLogicalID, err)
		}
		if n, ok := o.MaximumConcurrency[fn.LogicalID]; ok {
			c.maximum[q.QueueLogicalID] = n
		}
	}
	return c, nil
}

// instances is the function's pool of execution environments: the stack's
// Instances, raised to its event sources' maximum concurrency so that the
// cap can be reached (Lambda scales environments out to it), and lowered
// to its reserved concurrency, which no more environments may exceed.
func (c concurrency) instances(o *Options) int {
	n := o.Instances
	if n <= 0 {
		n = defaultInstances
	}
	for _, m := range c.maximum {
		n = max(n, m)
	}
	if c.reserved > 0 {
		n = min(n, c.reserved)
	}
	return n
}

// batches is how many batches a queue's poller has in flight at once: the
// mapping's maximum concurrency where it sets one, within the reserved
// concurrency; otherwise one per execution environment, since more would
// only wait for one to be free.
func (c concurrency) batches(o *Options, queue string) int {
	n := c.instances(o)
	if m := c.maximum[queue]; m > 0 {
		n = min(n, m)
	}
	return n
}

// Stats returns each function's invocation figures (count, billed
// duration, memory, peak concurrency), by logical id, since it started or
// since the last ResetStats.
func (s *Stack) Stats() map[string]runtimeapi.Stats {
	out := make(map[string]runtimeapi.Stats, len(s.byName))
	for name, f := range s.byName {
		out[name] = f.Stats()
	}
	return out
}

// ResetStats starts every function's figures again from now.
func (s *Stack) ResetStats() {
	for _, f := range s.byName {
		f.ResetStats()
	}
}

// MaximumConcurrency is the cap the stack enforces on a function's SQS
// event sources (the largest if it has several), 0 when it has none.
func (s *Stack) MaximumConcurrency(function string) int {
	return s.caps[function]
}
