// Package circuit is the circuit breaker around the model (SPEC_ORACLE_GEMINI_TIMEOUT
// invariants 5 and 7). Its state is one item in the Ledger table, so every
// generator container shares it and a restart does not reset it (GAP-02C).
// Every change is a conditional write naming the state it expects, so racing
// containers resolve to one winner: one trip, one half-open probe, one close.
//
// Use:
//
//	p, err := br.Allow(ctx) // or Read, beside other calls, then Admit
//	var open *circuit.OpenError
//	switch {
//	case errors.As(err, &open):
//		return park(job, open.Until) // rejected without calling the model
//	case err != nil:
//		log(err) // the Ledger is unreadable: call the model anyway
//	}
//	start := time.Now()
//	res, err := callModelWithRetries(ctx)
//	var tr circuit.Transition
//	if countable(err) {
//		tr, _ = br.Failed(ctx, p)
//	} else {
//		tr, _ = br.Succeeded(ctx, p, time.Since(start))
//	}
//	if tr.Changed() {
//		log(tr) // alert on tr.Tripped(): exactly one call across containers sees it
//	}
//
// The circuit is read once per call let through: Allow (or Read, which a
// caller can make beside its other calls, then Admit) reads it, and the
// permit remembers what it read, so a fast success writes only when the
// circuit it was let through had a streak to end, and reads nothing. A
// success thus ends the streaks counted before its call was let through;
// failures recorded while it ran stand, as they say more about the model
// now than a call begun before them.
//
// Report every permit exactly once: Failed for a final failure that says
// the model is unwell (retries exhausted on timeouts, network errors, 5xx),
// Succeeded for everything else, including errors that say nothing about the
// model's health (a 400 for a bad prompt means the model answered). Only the
// probe of a half-open circuit is held against other callers, and only for
// ProbeLease, so an unreported probe delays the next by that much at most.
package circuit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/obs"
)

// State is a circuit's state. Only CLOSED and OPEN are stored; HALF_OPEN is
// an OPEN circuit whose OpenFor has passed.
type State string

// The states.
const (
	Closed   State = "CLOSED"
	Open     State = "OPEN"
	HalfOpen State = "HALF_OPEN"
)

// Reason says why a circuit opened.
type Reason string

// The reasons.
const (
	ReasonFailures Reason = "failures" // FailureThreshold consecutive final failures, or a failed probe
	ReasonSlow     Reason = "slow"     // SlowCalls consecutive slow successes
)

// Options tune a Breaker; a zero field takes its default.
type Options struct {
	// FailureThreshold consecutive final failures (after the caller's
	// retries) open the circuit. Default 5 (GEMINI_CIRCUIT_OPEN_THRESHOLD).
	FailureThreshold int
	// OpenFor is how long the circuit stays OPEN before it half-opens and
	// lets one probe through. Default 60s (OPEN_DURATION_MS).
	OpenFor time.Duration
	// SlowThreshold is the latency above which a successful call is slow.
	// Default 30s.
	SlowThreshold time.Duration
	// SlowCalls consecutive slow successes open the circuit. This is the
	// GAP-02B decision: "slow" means the last SlowCalls successful calls
	// were all slower than SlowThreshold. A fast success ends the streak; a
	// failure neither ends nor extends it (it is counted as a failure).
	// Default 5.
	SlowCalls int
	// ProbeLease is how long a half-open probe holds its slot before another
	// container may probe instead; it must exceed one model call with its
	// retries. Default 2 minutes.
	ProbeLease time.Duration
	// Metrics, when set, gets the circuit's state at each transition this
	// breaker makes: obs.CircuitOpen 1 when it opens (or reopens), 0 when
	// it closes. Nil emits nothing.
	Metrics Gauge
}

// Measured is o with its transitions emitted to m.
func (o Options) Measured(m Gauge) Options {
	o.Metrics = m
	return o
}

// Gauge emits a state's value (obs.Metrics).
type Gauge interface {
	Gauge(name string, v float64)
}

func (o Options) withDefaults() Options {
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = 5
	}
	if o.OpenFor <= 0 {
		o.OpenFor = time.Minute
	}
	if o.SlowThreshold <= 0 {
		o.SlowThreshold = 30 * time.Second
	}
	if o.SlowCalls <= 0 {
		o.SlowCalls = 5
	}
	if o.ProbeLease <= 0 {
		o.ProbeLease = 2 * time.Minute
	}
	return o
}

// ErrOpen means the circuit rejected the call; the error is an *OpenError.
var ErrOpen = errors.New("circuit open")

// OpenError is Allow's rejection. Until is when a call may next be let
// through: when the circuit half-opens, or when a live probe's lease ends
// (the circuit may close sooner, if the probe succeeds).
type OpenError struct {
	Name   string
	Reason Reason
	Until  time.Time
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("circuit %s open (%s) until %s", e.Name, e.Reason, e.Until.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrOpen) hold.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Permit is Allow's leave to call the model; hand it back to Succeeded or
// Failed. The zero Permit (what Allow returns when the Ledger cannot be
// read) lets the call through but its outcome is not recorded: it is not
// known which open/close episode it belongs to.
type Permit struct {
	known bool
	gen   int64  // the episode the permit was issued in
	token string // set when the permit is the half-open probe
	// streak: the circuit it was let through had failures or slow calls
	// counted, which a fast success ends.
	streak bool
}

// Probe reports whether this permit is the half-open probe: its outcome
// closes or reopens the circuit.
func (p Permit) Probe() bool { return p.token != "" }

// Transition is a state change a call caused, for the caller to log or
// alert on. The zero Transition means nothing changed. Closed→Open is a
// trip (alert once: only the call that tripped gets it), HalfOpen→Open a
// failed probe, HalfOpen→Closed a recovery.
type Transition struct {
	From, To State
	Reason   Reason // why it opened; empty when it closed
}

// Changed reports whether the call changed the state.
func (t Transition) Changed() bool { return t.To != "" }

// Tripped reports whether the call opened a closed circuit.
func (t Transition) Tripped() bool { return t.From == Closed && t.To == Open }

// String reads like "CLOSED -> OPEN (failures)".
func (t Transition) String() string {
	if t.Reason == "" {
		return fmt.Sprintf("%s -> %s", t.From, t.To)
	}
	return fmt.Sprintf("%s -> %s (%s)", t.From, t.To, t.Reason)
}

// Snapshot is a circuit's state for health checks and logs.
type Snapshot struct {
	State    State
	Reason   Reason    // why it is open; empty when closed
	Failures int       // consecutive final failures
	Slow     int       // consecutive slow successes
	OpenedAt time.Time // zero when closed
	Until    time.Time // when an open circuit half-opens; zero when closed
}

// Breaker is one named circuit in the Ledger table (item pk "circuit#name").
// It holds no state of its own, so any number of Breakers in any number of
// containers share the circuit.
type Breaker struct {
	db    *awsenv.Tables
	table string
	name  string
	key   map[string]types.AttributeValue
	o     Options
	now   func() time.Time
}

// New returns the breaker name in table through db; now is the clock
// (time.Now when nil).
func New(db *awsenv.Tables, table, name string, o Options, now func() time.Time) *Breaker {
	if now == nil {
		now = time.Now
	}
	return &Breaker{
		db: db, table: table, name: name, o: o.withDefaults(), now: now,
		key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "circuit#" + name}},
	}
}

// item is the stored circuit. It has no expires_at: an OPEN circuit must not
// vanish by TTL. A missing item is a CLOSED circuit with nothing counted.
// gen grows at every transition, so a permit from an earlier episode cannot
// count towards, close or trip a later one.
type item struct {
	State      State  `dynamodbav:"state"`
	Gen        int64  `dynamodbav:"gen"`
	Failures   int    `dynamodbav:"failures"`
	Slow       int    `dynamodbav:"slow"`
	OpenedAt   int64  `dynamodbav:"opened_at"` // epoch ms
	Reason     Reason `dynamodbav:"reason"`
	Probe      string `dynamodbav:"probe"`
	ProbeUntil int64  `dynamodbav:"probe_until"` // epoch ms
}

func (it item) halfOpenAt(o Options) time.Time {
	return time.UnixMilli(it.OpenedAt).Add(o.OpenFor)
}

// Allow asks whether a model call may go ahead. CLOSED: yes. OPEN: no, with
// an *OpenError until OpenFor has passed; then exactly one caller across all
// containers gets the probe permit and the others get an *OpenError.
//
// When the Ledger cannot be read or written, Allow fails towards a closed
// circuit: it returns the zero Permit, which lets the call through, with the
// error for the caller to log. A DynamoDB hiccup must not stop generation
// while the model may be fine; an outage of both is caught by the caller's
// timeouts and retries.
func (b *Breaker) Allow(ctx context.Context) (Permit, error) {
	r, err := b.Read(ctx)
	if err != nil {
		return Permit{}, err
	}
	return b.Admit(ctx, r)
}

// Reading is the circuit as Read found it, for Admit.
type Reading struct{ it item }

// Read reads the circuit once, with a consistent read, for Admit: a caller
// makes it beside its other calls (the generator, beside its claim of the
// order) instead of before them. Its error is Allow's: fail towards a
// closed circuit.
func (b *Breaker) Read(ctx context.Context) (Reading, error) {
	it, err := b.get(ctx)
	if err != nil {
		return Reading{}, err
	}
	return Reading{it: it}, nil
}

// Admit is Allow deciding from r, read by Read in this invocation: a
// CLOSED circuit's permit costs no request; an OPEN one's rejection none;
// only a half-open circuit's probe is taken, by a conditional write.
func (b *Breaker) Admit(ctx context.Context, r Reading) (Permit, error) {
	it := r.it
	for range 2 {
		now := b.now()
		if it.State != Open {
			return Permit{known: true, gen: it.Gen, streak: it.Failures > 0 || it.Slow > 0}, nil
		}
		if until := it.halfOpenAt(b.o); now.Before(until) {
			return Permit{}, &OpenError{Name: b.name, Reason: it.Reason, Until: until}
		}
		if it.ProbeUntil > now.UnixMilli() {
			return Permit{}, &OpenError{Name: b.name, Reason: it.Reason, Until: time.UnixMilli(it.ProbeUntil)}
		}
		p, current, err := b.takeProbe(ctx, it.Gen, now)
		if err != nil || current == nil {
			return p, err
		}
		// Another container changed the circuit first; judge its new state.
		it = *current
	}
	return Permit{}, &OpenError{Name: b.name, Reason: it.Reason, Until: b.now().Add(b.o.ProbeLease)}
}

// takeProbe takes the probe slot of half-open episode gen; the probe is a
// lease, so a retried request whose first attempt took it still gets it.
// When another caller changed the circuit first, it returns the circuit as
// it now is.
func (b *Breaker) takeProbe(ctx context.Context, gen int64, now time.Time) (Permit, *item, error) {
	r, err := condwrite.UpdateLease(ctx, b.db, &dynamodb.UpdateItemInput{
		TableName:           aws.String(b.table),
		Key:                 b.key,
		UpdateExpression:    aws.String("SET probe = :wid, probe_until = :until"),
		ConditionExpression: aws.String("gen = :gen AND (attribute_not_exists(probe_until) OR probe_until <= :now)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until": num(now.Add(b.o.ProbeLease).UnixMilli()),
			":now":   num(now.UnixMilli()),
			":gen":   num(gen),
		},
	}, "probe")
	if err != nil {
		return Permit{}, nil, fmt.Errorf("take circuit %s probe: %w", b.name, err)
	}
	if r.Applied {
		return Permit{known: true, gen: gen, token: r.Token}, nil, nil
	}
	var it item
	if err := attributevalue.UnmarshalMap(r.Current, &it); err != nil {
		return Permit{}, nil, fmt.Errorf("decode circuit %s: %w", b.name, err)
	}
	return Permit{}, &it, nil
}

// Succeeded records a successful call that took latency (the whole call,
// retries included: a model that answers only on the third attempt is slow).
// A probe's success closes the circuit and resets the counts. Otherwise a
// success ends the failure streak, and a slow one extends the slow streak,
// which trips the circuit at SlowCalls. A success never closes an OPEN
// circuit unless it is the probe's.
//
// A fast success writes only when the circuit its permit was let through
// had a streak to end, and reads nothing: the common case costs no request.
func (b *Breaker) Succeeded(ctx context.Context, p Permit, latency time.Duration) (Transition, error) {
	slow := latency > b.o.SlowThreshold
	switch {
	case !p.known:
		return Transition{}, nil
	case p.Probe():
		n := 0
		if slow {
			n = 1 // the streak of a model that is still slow starts here
		}
		return b.closeCircuit(ctx, p, n)
	case slow:
		n, ok, err := b.count(ctx, p, "slow", "SET failures = :zero")
		if err != nil || !ok || n < b.o.SlowCalls {
			return Transition{}, err
		}
		return b.trip(ctx, p.gen, ReasonSlow, "slow", b.o.SlowCalls)
	}
	if !p.streak {
		return Transition{}, nil
	}
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(b.table),
		Key:                       b.key,
		UpdateExpression:          aws.String("SET failures = :zero, slow = :zero"),
		ConditionExpression:       aws.String("#st = :closed AND gen = :gen"),
		ExpressionAttributeNames:  map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": num(0), ":closed": str(string(Closed)), ":gen": num(p.gen)},
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return Transition{}, fmt.Errorf("reset circuit %s: %w", b.name, err)
	}
	return Transition{}, nil
}

// Failed records a final failure (the caller's retries exhausted). A probe's
// failure reopens the circuit for a fresh OpenFor. Otherwise it extends the
// failure streak, which trips the circuit at FailureThreshold; a failure from
// a permit issued before a trip counts for nothing.
func (b *Breaker) Failed(ctx context.Context, p Permit) (Transition, error) {
	switch {
	case !p.known:
		return Transition{}, nil
	case p.Probe():
		return b.reopen(ctx, p)
	}
	n, ok, err := b.count(ctx, p, "failures", "")
	if err != nil || !ok || n < b.o.FailureThreshold {
		return Transition{}, err
	}
	return b.trip(ctx, p.gen, ReasonFailures, "failures", b.o.FailureThreshold)
}

// count adds one to counter (failures or slow) of a CLOSED circuit still in
// the permit's episode, also applying set, and returns the new count; ok is
// false when the circuit has moved on (the outcome is stale).
func (b *Breaker) count(ctx context.Context, p Permit, counter, set string) (n int, ok bool, err error) {
	if set == "" {
		set = "SET"
	} else {
		set += ","
	}
	out, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.table),
		Key:       b.key,
		// The first write creates the item, so it sets the defaults too.
		UpdateExpression:          aws.String(set + " #st = if_not_exists(#st, :closed), gen = if_not_exists(gen, :zero) ADD #n :one"),
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR (#st = :closed AND gen = :gen)"),
		ExpressionAttributeNames:  map[string]string{"#st": "state", "#n": counter},
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": num(0), ":one": num(1), ":closed": str(string(Closed)), ":gen": num(p.gen)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if condwrite.ConditionFailed(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("count circuit %s %s: %w", b.name, counter, err)
	}
	v, _ := out.Attributes[counter].(*types.AttributeValueMemberN)
	if v == nil {
		return 0, false, fmt.Errorf("count circuit %s %s: no count returned", b.name, counter)
	}
	n, err = strconv.Atoi(v.Value)
	if err != nil {
		return 0, false, fmt.Errorf("count circuit %s %s: %w", b.name, counter, err)
	}
	return n, true, nil
}

// trip opens the circuit of episode gen if counter still stands at limit or
// more; of several racing callers only the first succeeds.
func (b *Breaker) trip(ctx context.Context, gen int64, reason Reason, counter string, limit int) (Transition, error) {
	return b.change(ctx, "open", Transition{From: Closed, To: Open, Reason: reason}, &dynamodb.UpdateItemInput{
		UpdateExpression:         aws.String("SET #st = :open, opened_at = :now, reason = :reason, gen = gen + :one, write_id = :wid REMOVE probe, probe_until"),
		ConditionExpression:      aws.String("#st = :closed AND gen = :gen AND #n >= :limit"),
		ExpressionAttributeNames: map[string]string{"#st": "state", "#n": counter},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":open": str(string(Open)), ":closed": str(string(Closed)), ":now": num(b.now().UnixMilli()),
			":reason": str(string(reason)), ":one": num(1), ":gen": num(gen), ":limit": num(int64(limit)),
		},
	})
}

// closeCircuit closes the circuit if p still holds the probe; when the
// lease lapsed and another probe took over, it changes nothing.
func (b *Breaker) closeCircuit(ctx context.Context, p Permit, slow int) (Transition, error) {
	return b.change(ctx, "close", Transition{From: HalfOpen, To: Closed}, &dynamodb.UpdateItemInput{
		UpdateExpression:         aws.String("SET #st = :closed, failures = :zero, slow = :slow, gen = gen + :one, write_id = :wid REMOVE probe, probe_until, opened_at, reason"),
		ConditionExpression:      aws.String("probe = :token"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":closed": str(string(Closed)), ":zero": num(0), ":slow": num(int64(slow)), ":one": num(1), ":token": str(p.token),
		},
	})
}

// reopen restarts OpenFor if p still holds the probe.
func (b *Breaker) reopen(ctx context.Context, p Permit) (Transition, error) {
	return b.change(ctx, "reopen", Transition{From: HalfOpen, To: Open, Reason: ReasonFailures}, &dynamodb.UpdateItemInput{
		UpdateExpression:    aws.String("SET opened_at = :now, reason = :reason, gen = gen + :one, write_id = :wid REMOVE probe, probe_until"),
		ConditionExpression: aws.String("probe = :token"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": num(b.now().UnixMilli()), ":reason": str(string(ReasonFailures)), ":one": num(1), ":token": str(p.token),
		},
	})
}

// change makes the write of transition tr on the circuit's item: in's
// update must set write_id = :wid, so that a request the SDK retried after
// its answer was lost recognises its own first attempt (condwrite). It
// returns tr when the write was applied, the zero Transition when the
// circuit had moved on; what names the change in errors.
func (b *Breaker) change(ctx context.Context, what string, tr Transition, in *dynamodb.UpdateItemInput) (Transition, error) {
	in.TableName, in.Key = aws.String(b.table), b.key
	r, err := condwrite.Update(ctx, b.db, in)
	if err != nil {
		return Transition{}, fmt.Errorf("%s circuit %s: %w", what, b.name, err)
	}
	if !r.Applied {
		return Transition{}, nil
	}
	if b.o.Metrics != nil {
		open := 0.0
		if tr.To == Open {
			open = 1
		}
		b.o.Metrics.Gauge(obs.CircuitOpen, open)
	}
	return tr, nil
}

// State returns the circuit's state for health checks and logs.
func (b *Breaker) State(ctx context.Context) (Snapshot, error) {
	it, err := b.get(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{State: Closed, Failures: it.Failures, Slow: it.Slow}
	if it.State == Open {
		s.State, s.Reason = Open, it.Reason
		s.OpenedAt, s.Until = time.UnixMilli(it.OpenedAt), it.halfOpenAt(b.o)
		if !b.now().Before(s.Until) {
			s.State = HalfOpen
		}
	}
	return s, nil
}

// get reads the circuit with a consistent read; a missing item is CLOSED.
func (b *Breaker) get(ctx context.Context) (item, error) {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(b.table),
		Key:            b.key,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return item{}, fmt.Errorf("read circuit %s: %w", b.name, err)
	}
	it := item{State: Closed}
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return item{}, fmt.Errorf("decode circuit %s: %w", b.name, err)
	}
	return it, nil
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
