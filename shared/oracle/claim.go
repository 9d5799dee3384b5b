package oracle

// ClaimOutcome says what a claim on an order found and what its caller must
// do next.
type ClaimOutcome int

// Claim outcomes.
const (
	// Claimed: this call recorded the order's state first; if the state owes
	// a job, the caller holds the job lease and must enqueue it.
	Claimed ClaimOutcome = iota + 1
	// Resumed: the state was recorded before but its job was never
	// enqueued (an earlier attempt failed or died); this call took the job
	// lease and must enqueue it.
	Resumed
	// InFlight: another attempt holds a live job lease; nothing was done.
	InFlight
	// Done: the state was recorded and nothing is owed; a duplicate.
	Done
)

var outcomeNames = map[ClaimOutcome]string{Claimed: "claimed", Resumed: "resumed", InFlight: "in_flight", Done: "done"}

func (o ClaimOutcome) String() string {
	if s, ok := outcomeNames[o]; ok {
		return s
	}
	return "unknown"
}

// Claim is the result of claiming an order.
type Claim struct {
	Outcome ClaimOutcome
	Order   Order // the order as stored after the claim
	// Lease identifies the job lease this caller holds (Claimed or Resumed
	// with a job owed); only its holder may record the job or release it.
	Lease string
}

// MustEnqueue reports whether the caller now owes the order's job.
func (c Claim) MustEnqueue() bool {
	return (c.Outcome == Claimed || c.Outcome == Resumed) && c.Order.OwesJob()
}
