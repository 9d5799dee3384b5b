package x402rail_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/tracing"
	"42sisters.ai/oracle/shared/x402"
	"42sisters.ai/oracle/shared/x402rail"
)

// store is a secret store whose value the test rotates.
type store struct {
	mu    sync.Mutex
	value string
	reads int
}

func (s *store) Secret(context.Context, string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return s.value, nil
}

// cdpKey is a CDP API key pair as the secret holds it: "<id> <secret>".
func cdpKey(t *testing.T, id string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id + " " + base64.StdEncoding.EncodeToString(priv)
}

// TestARefusedFacilitatorKeyIsReadAgain: a facilitator that refuses the key read at
// cold start (401) is asked again, once, with the key the secret holds now;
// a key the secret still holds is not retried.
func TestARefusedFacilitatorKeyIsReadAgain(t *testing.T) {
	var mu sync.Mutex
	var accept string
	var kids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		head, _, _ := strings.Cut(token, ".")
		b, _ := base64.RawURLEncoding.DecodeString(head)
		var h struct {
			Kid string `json:"kid"`
		}
		_ = json.Unmarshal(b, &h)
		mu.Lock()
		kids = append(kids, h.Kid)
		ok := h.Kid == accept
		mu.Unlock()
		if !ok {
			http.Error(w, `{"errorMessage":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"}]}`))
	}))
	defer srv.Close()
	// sent returns the key ids sent since the last call and accepts id
	// from now on.
	sent := func(id string) string {
		mu.Lock()
		defer mu.Unlock()
		out := strings.Join(kids, ",")
		kids, accept = nil, id
		return out
	}

	old, rotated := cdpKey(t, "key-old"), cdpKey(t, "key-new")
	src := &store{value: old}
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	key := secret.New(secret.Options{Name: "X402_FACILITATOR_KEY", ARN: "arn:secret", Source: src, Initial: old, Now: func() time.Time { return now }})
	f := x402rail.NewFacilitator(srv.URL, srv.Client(), key)
	ctx := context.Background()

	// The secret was rotated; the facilitator accepts only the new key.
	now = now.Add(2 * secret.DefaultEvery)
	src.mu.Lock()
	src.value = rotated
	src.mu.Unlock()
	sent("key-new")
	s, err := f.Supported(ctx)
	if err != nil || len(s.Kinds) != 1 || s.Kinds[0].Network != x402.NetworkBase {
		t.Fatalf("supported %+v, %v; want the kinds after the key was read again", s, err)
	}
	if got := sent("key-new"); got != "key-old,key-new" || src.reads != 1 {
		t.Fatalf("keys sent %s after %d read(s), want the old one refused, then the new one", got, src.reads)
	}
	// The new key is kept: the next call sends it at once.
	_, err = f.Supported(ctx)
	if got := sent("key-other"); err != nil || got != "key-new" {
		t.Fatalf("the next call sent %s (%v), want the new key alone", got, err)
	}

	// Refused with the key the secret still holds: no second try.
	now = now.Add(2 * secret.DefaultEvery)
	_, err = f.Supported(ctx)
	if got := sent(""); !errors.Is(err, x402.ErrCredentialRefused) || got != "key-new" {
		t.Fatalf("a refusal of the current key: %v after %s, want the refusal after one request", err, got)
	}
}

// TestSettingsFromTheEnvironment: the rail is off without X402_PAY_TO and
// nothing else is read; on, its networks, facilitator and key are checked.
func TestSettingsFromTheEnvironment(t *testing.T) {
	const payTo = "0x857b06519e91e3a54538791bdbb0e22373e36b66"
	for _, c := range []struct {
		name     string
		env      map[string]string
		networks []x402.Network
		problem  string
	}{
		{"off", map[string]string{"X402_NETWORKS": "nonsense"}, nil, ""},
		{"testnet by default", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "https://x402.org/facilitator"}, []x402.Network{x402.NetworkBaseSepolia}, ""},
		{"both", map[string]string{"X402_PAY_TO": payTo, "X402_NETWORKS": "both", "X402_FACILITATOR_URL": "https://x402.org/facilitator"},
			[]x402.Network{x402.NetworkBase, x402.NetworkBaseSepolia}, ""},
		{"a bad wallet", map[string]string{"X402_PAY_TO": "0x12", "X402_FACILITATOR_URL": "https://x402.org/facilitator"}, []x402.Network{x402.NetworkBaseSepolia}, "X402_PAY_TO"},
		{"a bad network", map[string]string{"X402_PAY_TO": payTo, "X402_NETWORKS": "solana", "X402_FACILITATOR_URL": "https://x402.org/facilitator"}, nil, "X402_NETWORKS"},
		{"no facilitator", map[string]string{"X402_PAY_TO": payTo}, []x402.Network{x402.NetworkBaseSepolia}, "X402_FACILITATOR_URL"},
		{"a bad key", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "https://x402.org/facilitator", "X402_FACILITATOR_KEY": "just-one-part"},
			[]x402.Network{x402.NetworkBaseSepolia}, "X402_FACILITATOR_KEY"},
		// The facilitator's answer says whether money moved: plain http is
		// refused except to a loopback address (the local stack's fake).
		{"http to another host", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "http://x402.org/facilitator"},
			[]x402.Network{x402.NetworkBaseSepolia}, "X402_FACILITATOR_URL"},
		{"http to a private address", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "http://10.0.0.7:3005"},
			[]x402.Network{x402.NetworkBaseSepolia}, "X402_FACILITATOR_URL"},
		{"http to a host named like loopback", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "http://127.0.0.1.evil.example"},
			[]x402.Network{x402.NetworkBaseSepolia}, "X402_FACILITATOR_URL"},
		{"http to 127.0.0.1", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "http://127.0.0.1:3005"}, []x402.Network{x402.NetworkBaseSepolia}, ""},
		{"http to 127.8.9.10", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "http://127.8.9.10:3005"}, []x402.Network{x402.NetworkBaseSepolia}, ""},
		{"http to localhost", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "http://localhost:3005"}, []x402.Network{x402.NetworkBaseSepolia}, ""},
		{"http to ::1", map[string]string{"X402_PAY_TO": payTo, "X402_FACILITATOR_URL": "http://[::1]:3005"}, []x402.Network{x402.NetworkBaseSepolia}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := config.New(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }, nil)
			s := x402rail.FromEnv(context.Background(), env)
			err := env.Err()
			if (c.problem == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.problem)) {
				t.Fatalf("problems %v, want %q", err, c.problem)
			}
			if s.On() != (c.env["X402_PAY_TO"] != "") {
				t.Errorf("on %v with X402_PAY_TO %q", s.On(), c.env["X402_PAY_TO"])
			}
			var got []x402.Network
			for _, n := range s.Networks {
				got = append(got, n.Network)
			}
			if strings.Join(netStrings(got), ",") != strings.Join(netStrings(c.networks), ",") {
				t.Errorf("networks %v, want %v", got, c.networks)
			}
		})
	}
}

func netStrings(ns []x402.Network) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = string(n)
	}
	return out
}

// TestFacilitatorCallsAreSpans: each call to the facilitator is a client
// span of the agent's request's trace (its method and path, never the
// query), so an agent's paid request shows where its time went.
func TestFacilitatorCallsAreSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"}]}`))
	}))
	defer srv.Close()
	client := srv.Client()
	f := x402rail.NewFacilitator(srv.URL, client, nil)
	ctx, parent := tracing.Tracer().Start(context.Background(), "agent")
	if _, err := f.Supported(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var calls []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "facilitator GET" {
			calls = append(calls, s)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("%d facilitator spans of %d, want 1", len(calls), len(rec.Ended()))
	}
	s := calls[0]
	attrs := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		attrs[kv.Key] = kv.Value.String()
	}
	if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient ||
		attrs["url.path"] != "/supported" || attrs["http.response.status_code"] != "200" {
		t.Fatalf("span %s (kind %v, parent %v) with %v, want a client child of the request's span for GET /supported", s.Name(), s.SpanKind(), s.Parent().SpanID(), attrs)
	}
	if client.Transport != nil && client.Transport != srv.Client().Transport {
		t.Fatal("the caller's client was changed")
	}
}
