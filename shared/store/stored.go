package store

import (
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// stored is an order as the Orders table keeps it: the domain's Order and
// what only the store reads. The job lease (an expiry in epoch
// milliseconds, so DynamoDB can compare it, and a random token) lets one
// claimer at a time send the job an order is owed; the generation lease
// does the same for one generator; the TTL is the order's Expires.
type stored struct {
	oracle.Order
	JobLeaseUntil int64  `dynamodbav:"job_lease_until,omitempty"`
	JobLease      string `dynamodbav:"job_lease,omitempty"`
	GenLeaseUntil int64  `dynamodbav:"gen_lease_until,omitempty"`
	GenLease      string `dynamodbav:"gen_lease,omitempty"`
	ExpiresAt     int64  `dynamodbav:"expires_at"` // DynamoDB's TTL, epoch seconds
	// Name is the order's name (oracle.ShortID), the key of NameIndex:
	// alerts and log lines name an order by it alone, and `make ops`
	// finds the order through it.
	Name string `dynamodbav:"name,omitempty"`
}

func storedOf(o oracle.Order) stored {
	s := stored{Order: o, Name: oracle.ShortID(o.SessionID)}
	if !o.Expires.IsZero() {
		s.ExpiresAt = o.Expires.Unix()
	}
	return s
}

func (s stored) order() oracle.Order {
	o := s.Order
	if s.ExpiresAt > 0 {
		o.Expires = time.Unix(s.ExpiresAt, 0).UTC()
	}
	return o
}
