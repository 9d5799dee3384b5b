package stack

import "github.com/aws/aws-sdk-go-v2/aws"

// What one order costs in requests and waits is read from a stack that
// runs that order alone: these tell when it is done, and let a measure
// take the functions' own way to moto.

// Busy reports whether any function has an invocation in flight, or an
// extension still at work on one it answered (its spans' export). Once the
// queues are empty and no function is busy, nothing of an order runs any
// more: its requests are all counted and its spans all received.
func (s *Stack) Busy() bool {
	for _, f := range s.functions {
		if f.Busy() {
			return true
		}
	}
	return false
}

// FunctionsAWS is the configuration the functions reach moto with: through
// the meter with Options.MeterAWS, so that a round trip measured with it
// takes the functions' way (and is counted, until the meter's Reset).
func (s *Stack) FunctionsAWS() aws.Config {
	cfg := s.AWS.Copy()
	cfg.BaseEndpoint = aws.String(s.backend.functionsEndpoint())
	return cfg
}

// Counts are the requests counted by "service.Operation"
// ("dynamodb.GetItem", "s3.PutObject") since the start or the last Reset,
// without Usage's reads of the items written.
func (m *Meter) Counts() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.ops))
	for k, v := range m.ops {
		out[k] = v.Count
	}
	return out
}
