// Package storeguard bounds every call to the Orders table and the Ledger
// and makes its failure heard at once: each DynamoDB call has its own
// deadline and each of its attempts a shorter one, and a call that still
// fails after the SDK's retries raises STORE_FAILED from the function that
// met it, instead of waiting for the health job's next run, deduplicated
// per table and operation: in this container's memory first, because the
// alerts' own dedupe lives in the Ledger, which may be what is down, and
// then in the Ledger when it answers. A call that needed a retry to
// succeed is a WARN log line and counts StoreRetries, which an alarm
// watches: a blip is recorded, a pattern is heard, and a burst of
// throttling does not flood the alerts topic.
package storeguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/obs"
)

// The defaults (SPEC_ORACLE_CACHE_ALERT's CACHE_CONNECT_TIMEOUT_MS of 2 s
// per attempt). CallTimeout bounds a call with its retries; with the
// alert's own timeout it stays well inside the shortest function timeout
// of the template (10 s), so a hanging store answers the caller with an
// error it can act on (a 500 that Stripe retries, a failed SQS delivery)
// before Lambda kills the invocation.
const (
	AttemptTimeout = 2 * time.Second
	CallTimeout    = 5 * time.Second
)

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// Raiser raises operator alerts (alert.Alerter).
type Raiser interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Guard is the store calls' deadlines and alerts. Its zero value uses the
// defaults; without Alerts it only bounds the calls.
type Guard struct {
	Alerts  Raiser
	Metrics Counter
	Log     *slog.Logger
	Now     func() time.Time
	// AttemptTimeout, CallTimeout and Window replace the defaults
	// (AttemptTimeout, CallTimeout, alert.DefaultWindow) when set.
	AttemptTimeout time.Duration
	CallTimeout    time.Duration
	Window         time.Duration

	mu     sync.Mutex
	raised map[string]time.Time
}

// Options adds the guard to cfg's clients. It acts on DynamoDB calls only,
// so it can sit in the configuration every client of a function is made
// from.
func (g *Guard) Options(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, g.Middleware)
}

// Middleware adds the guard to one operation's stack: the call's deadline
// and its alerts around the SDK's retries, an attempt's deadline inside them.
func (g *Guard) Middleware(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("StoreGuardCall", g.call), middleware.After); err != nil {
		return fmt.Errorf("store guard: %w", err)
	}
	if err := stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("StoreGuardAttempt", g.attempt), "Retry", middleware.After); err != nil {
		return fmt.Errorf("store guard: %w", err)
	}
	return nil
}

type quietKey struct{}

// quiet marks the alert's own calls (its dedupe in the Ledger), which must
// not raise another alert when the Ledger is what failed.
func quiet(ctx context.Context) context.Context { return context.WithValue(ctx, quietKey{}, true) }

func isDynamoDB(ctx context.Context) bool {
	return awsmiddleware.GetServiceID(ctx) == dynamodb.ServiceID
}

func (g *Guard) attempt(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	if !isDynamoDB(ctx) {
		return next.HandleFinalize(ctx, in)
	}
	limit := or(g.AttemptTimeout, AttemptTimeout)
	actx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, md, err := next.HandleFinalize(actx, in)
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		// The SDK takes a cut context for the caller giving up and does
		// not retry it; an attempt cut here is a slow store, which it
		// retries as it does a timed-out connection.
		err = attemptTimeout(limit)
	}
	return out, md, err
}

// attemptTimeout is an attempt that did not answer in time: a timeout in
// the SDK's eyes (retryable), never a cancellation.
type attemptTimeout time.Duration

func (a attemptTimeout) Error() string {
	return fmt.Sprintf("the store did not answer within %s", time.Duration(a))
}

// Timeout marks the error as a timeout for the SDK's retryer.
func (attemptTimeout) Timeout() bool { return true }

func (g *Guard) call(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	if !isDynamoDB(ctx) {
		return next.HandleInitialize(ctx, in)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, or(g.CallTimeout, CallTimeout))
	defer cancel()
	out, md, err := next.HandleInitialize(ctx, in)
	if parent.Value(quietKey{}) != nil {
		return out, md, err
	}
	op := awsmiddleware.GetOperationName(ctx) + " " + table(in.Parameters)
	switch {
	case err == nil:
		if n := attempts(md); n > 1 {
			if g.Log != nil {
				g.Log.WarnContext(ctx, "store call succeeded on a retry", "operation", op, "attempts", n)
			}
			if g.Metrics != nil {
				g.Metrics.Count(obs.StoreRetries, 1)
			}
		}
	case condwrite.ConditionFailed(err):
		// A failed condition is an answer, not a failure of the store.
	case parent.Err() != nil:
		// The caller gave up (its own deadline); it reports that itself.
	default:
		detail := fmt.Sprintf("%s failed after %d attempts: %v", op, max(attempts(md), 1), err)
		if errors.Is(err, context.DeadlineExceeded) {
			detail = fmt.Sprintf("%s did not answer within %s (%d attempts)", op, or(g.CallTimeout, CallTimeout), max(attempts(md), 1))
		}
		if g.Alerts == nil {
			break
		}
		g.raise(parent, alert.Alert{Severity: alert.Error, Kind: alert.StoreFailed, Subject: op, Detail: detail})
	}
	return out, md, err
}

// raise raises a unless this container raised the same kind for the same
// operation within the window. The alerter then dedupes across containers
// through the Ledger, when the Ledger answers.
func (g *Guard) raise(ctx context.Context, a alert.Alert) {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	key := string(a.Kind) + " " + a.Subject
	t := now()
	g.mu.Lock()
	last, seen := g.raised[key]
	fresh := !seen || t.Sub(last) >= or(g.Window, alert.DefaultWindow)
	if fresh {
		if g.raised == nil {
			g.raised = map[string]time.Time{}
		}
		g.raised[key] = t
	}
	g.mu.Unlock()
	if !fresh {
		if g.Log != nil {
			g.Log.InfoContext(ctx, "store alert suppressed within this container's dedupe window", "kind", string(a.Kind), "operation", a.Subject)
		}
		return
	}
	// The caller's deadline may be nearly spent by the failed call; the
	// alert has its own timeout, so it starts from a context of its own.
	g.Alerts.Raise(quiet(context.WithoutCancel(ctx)), a)
}

// attempts is how many attempts the SDK made.
func attempts(md middleware.Metadata) int {
	r, ok := retry.GetAttemptResults(md)
	if !ok {
		return 0
	}
	return len(r.Results)
}

// table names the table of a call's input.
func table(params any) string {
	var name *string
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		name = in.TableName
	case *dynamodb.PutItemInput:
		name = in.TableName
	case *dynamodb.UpdateItemInput:
		name = in.TableName
	case *dynamodb.DeleteItemInput:
		name = in.TableName
	case *dynamodb.QueryInput:
		name = in.TableName
	case *dynamodb.ScanInput:
		name = in.TableName
	case *dynamodb.DescribeTableInput:
		name = in.TableName
	}
	return aws.ToString(name)
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
