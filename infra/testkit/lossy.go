package testkit

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
)

// Lossy is an HTTP transport for an AWS client that sends every request on
// but loses the answer to the next request of the armed DynamoDB operation,
// as a dropped connection does: the write is applied, the SDK retries it,
// and the retry meets the state the first attempt made.
type Lossy struct {
	mu    sync.Mutex
	armed string // e.g. "UpdateItem"; "" passes everything
	skip  int    // requests of the armed operation to answer first
}

// Arm loses the answer to the next request of op ("" disarms).
func (l *Lossy) Arm(op string) { l.ArmAfter(op, 0) }

// ArmAfter answers n requests of op, then loses the next one's answer.
func (l *Lossy) ArmAfter(op string, n int) {
	l.mu.Lock()
	l.armed, l.skip = op, n
	l.mu.Unlock()
}

// Armed reports whether the armed answer is still to be lost: a test that
// meant to lose one checks it did.
func (l *Lossy) Armed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.armed != ""
}

// RoundTrip implements http.RoundTripper.
func (l *Lossy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.armed != "" && strings.HasSuffix(r.Header.Get("X-Amz-Target"), "."+l.armed) {
		if l.skip > 0 {
			l.skip--
			return resp, nil
		}
		l.armed = ""
		resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return resp, err
}
