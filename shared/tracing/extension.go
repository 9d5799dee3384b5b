//go:build !notracing

package tracing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
)

// An invocation's spans leave after its answer, not before: the function
// registers an internal Lambda extension (the Extensions API, in the
// function's own process), and Lambda keeps the execution environment
// running after the runtime has answered until every extension asks for
// its next event. The caller (API Gateway's client, Stripe, SQS) has its
// answer while the spans are encoded, signed and posted to X-Ray, which
// would otherwise add their round trip to every answer.
//
// The extension asks Lambda for the next event as soon as it has
// registered (that ends its part of the init phase), and after each
// INVOKE waits for the invocation's export, which Invocations hands it
// once the handler has returned, does it, and asks again: Lambda starts no
// other invocation in this environment before that. Where there is no
// Extensions API (tests, tools) or registering fails, Invocations exports
// before answering, as before.

// extensionName names the extension to Lambda.
const extensionName = "oracle-traces"

// registerTimeout bounds the registration: it runs in the init phase.
const registerTimeout = 2 * time.Second

// extension is the internal extension that exports each invocation's spans.
type extension struct {
	base string // http://<AWS_LAMBDA_RUNTIME_API>/2020-01-01/extension
	id   string
	http *http.Client
	log  *slog.Logger
	// work takes the export of the invocation in flight.
	work chan func()
	// alive is false once the extension has stopped asking for events:
	// the exports are then made before the answers.
	alive atomic.Bool
}

// startExtension registers with the Extensions API at api (the host:port
// of AWS_LAMBDA_RUNTIME_API) and starts asking for events.
func startExtension(api string, log *slog.Logger) (*extension, error) {
	x := &extension{base: "http://" + api + "/2020-01-01/extension", http: &http.Client{}, log: log, work: make(chan func(), 1)}
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.base+"/register", bytes.NewReader([]byte(`{"events":["INVOKE"]}`)))
	if err != nil {
		return nil, fmt.Errorf("register the traces extension: %w", err)
	}
	req.Header.Set("Lambda-Extension-Name", extensionName)
	req.Header.Set("Content-Type", "application/json")
	resp, err := x.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("register the traces extension: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("register the traces extension: %d %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	if x.id = resp.Header.Get("Lambda-Extension-Identifier"); x.id == "" {
		return nil, errors.New("register the traces extension: no Lambda-Extension-Identifier in the answer")
	}
	x.alive.Store(true)
	go x.run()
	return x, nil
}

// run asks for each event and, after an INVOKE, does the invocation's
// export before asking again.
func (x *extension) run() {
	for {
		if err := x.next(); err != nil {
			x.alive.Store(false)
			x.log.Warn("the traces extension stopped; spans are exported before each answer", "error", err.Error())
			return
		}
		(<-x.work)()
	}
}

// next asks for the next event; it returns when Lambda starts an
// invocation.
func (x *extension) next() error {
	req, err := http.NewRequest(http.MethodGet, x.base+"/event/next", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Lambda-Extension-Identifier", x.id)
	resp, err := x.http.Do(req)
	if err != nil {
		return fmt.Errorf("next event: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("next event: %d %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	if !bytes.Contains(body, []byte(`"INVOKE"`)) {
		// SHUTDOWN, which an internal extension is not sent, or
		// something new: nothing to wait for.
		return fmt.Errorf("next event: not an invocation: %.200s", body)
	}
	return nil
}

// after hands export to the extension, to run once the answer has gone,
// and reports whether it took it.
func (x *extension) after(export func()) bool {
	if x == nil || !x.alive.Load() {
		return false
	}
	select {
	case x.work <- export:
		return true
	default:
		// One export an invocation; a second in one would be a bug:
		// make it now rather than drop it.
		return false
	}
}
