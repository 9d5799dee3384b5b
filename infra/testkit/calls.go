package testkit

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Calls stands in an aws.Config's HTTP client and notes each AWS request
// made through it, by operation ("DynamoDB.GetItem", "S3.PUT",
// "SQS.SendMessage", "SNS.Publish"), so that a test counts the requests a
// step makes against the real services, and can hold some of them until
// others are on their way (Together), which shows that calls run
// concurrently without timing them.
type Calls struct {
	next aws.HTTPClient

	mu     sync.Mutex
	ops    []string
	groups []*together
}

// together holds each of n calls matching until all n are in flight.
type together struct {
	match   func(op string) bool
	n       int
	arrived int
	all     chan struct{}
	wait    time.Duration
	missed  bool
}

// CountCalls returns cfg with its requests noted by the returned Calls.
func CountCalls(cfg aws.Config) (aws.Config, *Calls) {
	c := &Calls{next: cfg.HTTPClient}
	if c.next == nil {
		c.next = awshttp.NewBuildableClient()
	}
	cfg = cfg.Copy()
	cfg.HTTPClient = c
	return cfg, c
}

// Do notes the request's operation and sends it.
func (c *Calls) Do(r *http.Request) (*http.Response, error) {
	op := operation(r)
	c.mu.Lock()
	c.ops = append(c.ops, op)
	var g *together
	var hold chan struct{}
	for _, candidate := range c.groups {
		if candidate.match(op) && candidate.arrived < candidate.n {
			g = candidate
			g.arrived++
			if g.arrived == g.n {
				close(g.all)
			}
			hold = g.all
			break
		}
	}
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-time.After(g.wait):
			c.mu.Lock()
			g.missed = true
			c.mu.Unlock()
		}
	}
	return c.next.Do(r)
}

// Together holds each of the next n requests that match until all n are
// in flight, or until wait has passed for one of them; Missed then
// reports whether one waited in vain: the request that would have
// released them was waiting for them (they were not made concurrently).
// A request joins the first group given whose match it meets and which
// is not yet full.
func (c *Calls) Together(n int, wait time.Duration, match func(op string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groups = append(c.groups, &together{match: match, n: n, all: make(chan struct{}), wait: wait})
}

// Missed reports whether a request held by Together waited in vain.
func (c *Calls) Missed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		if g.missed {
			return true
		}
	}
	return false
}

// Incomplete reports whether a group given to Together is not yet full.
func (c *Calls) Incomplete() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		if g.arrived < g.n {
			return true
		}
	}
	return false
}

// Take returns the operations noted since the last Take, in the order
// they were made, and forgets them.
func (c *Calls) Take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.ops
	c.ops = nil
	return out
}

// operation names an AWS request: the JSON protocols' X-Amz-Target (its
// service prefix shortened), the query protocol's Action, else S3 and the
// method.
func operation(r *http.Request) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		svc, op, _ := strings.Cut(t, ".")
		switch {
		case strings.HasPrefix(svc, "DynamoDB"):
			svc = "DynamoDB"
		case strings.HasPrefix(svc, "AmazonSQS"):
			svc = "SQS"
		}
		return svc + "." + op
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			if v, err := url.ParseQuery(string(body)); err == nil && v.Get("Action") != "" {
				svc := "Query"
				if strings.Contains(v.Get("Version"), "2010-03-31") {
					svc = "SNS"
				}
				return svc + "." + v.Get("Action")
			}
		}
	}
	return "S3." + r.Method
}
