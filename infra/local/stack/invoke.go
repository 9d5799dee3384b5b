package stack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	fakeses "42sisters.ai/oracle/infra/fakes/fakeses"
	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/sam"
)

// Invoke runs one invocation of one function, as `sam local invoke` does:
// moto is found or started (and stopped again if started here), the
// template provisioned, the function built and run once with payload.
// Unless a real test key is set, the running stack's fake Stripe (on
// StripePort) is used, or else a fake Stripe on a free port that delivers
// no webhooks; a fake Gemini stands in unless a real key is set. A
// function failure is a *runtimeapi.Error.
func Invoke(ctx context.Context, o Options, logicalID string, payload []byte) ([]byte, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	o.Instances = 1
	b, err := prepare(ctx, &o)
	if err != nil {
		return nil, err
	}
	defer b.close()
	var fn *sam.Function
	var names []string
	for _, f := range b.template.Functions() {
		if f.LogicalID == logicalID {
			fn = &f
		}
		names = append(names, f.LogicalID)
	}
	if fn == nil {
		return nil, fmt.Errorf("no function %q in the template (functions: %v)", logicalID, names)
	}
	bins, err := build(ctx, &o, []sam.Function{*fn})
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	if running := fmt.Sprintf("http://127.0.0.1:%d", o.StripePort); o.fakeStripe() && fakeStripeAlive(ctx, running) {
		// The running stack's fake Stripe, as moto is found: what the
		// function does there (a refund) is seen by the stack (its event
		// reaches the stack's webhook).
		env["STRIPE_API_BASE"] = running
	} else if o.fakeStripe() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listen for the fake Stripe: %w", err)
		}
		srv := &http.Server{Handler: fakestripe.New(fakestripe.Options{}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		env["STRIPE_API_BASE"] = "http://" + ln.Addr().String()
	}
	if o.fakeGemini() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listen for the fake Gemini: %w", err)
		}
		srv := &http.Server{Handler: fakegemini.New(fakegemini.Options{}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		env["GEMINI_API_BASE"] = "http://" + ln.Addr().String()
	}
	// SES through the front (moto lacks GetAccount), and moto's settings,
	// as in the running stack.
	ses, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the fake SES front: %w", err)
	}
	sesSrv := &http.Server{Handler: fakeses.New(fakeses.Options{Moto: b.endpoint, AWS: b.aws}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = sesSrv.Serve(ses) }()
	defer sesSrv.Close()
	env["AWS_ENDPOINT_URL_SESV2"] = "http://" + ses.Addr().String()
	// The running stack's trace receiver, when there is one: the
	// invocation's spans then join its waterfall, as its own functions'
	// do. Without one, the function records none.
	if front := fmt.Sprintf("http://127.0.0.1:%d", o.Port); receiverAlive(ctx, front+otlpPath+"/v1/traces") {
		env["OTEL_EXPORTER_OTLP_ENDPOINT"] = front + otlpPath
	}
	motoSettings(env)
	env["AWS_ENDPOINT_URL"] = b.functionsEndpoint()
	vars, err := environment(&o, b, *fn, env)
	if err != nil {
		return nil, err
	}
	f, err := function(&o, b, *fn, bins[fn.LogicalID], vars, concurrency{})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Invoke(ctx, payload)
}

// receiverAlive reports whether an OTLP/HTTP traces receiver answers at
// url: an empty export request, which adds nothing, answered 200.
func receiverAlive(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, http.NoBody)
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// fakeStripeAlive reports whether a fake Stripe answers at base (its
// introspection route, which the real API does not have).
func fakeStripeAlive(ctx context.Context, base string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_events", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
