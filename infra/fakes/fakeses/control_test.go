package fakeses_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/fakes/fakeses"
)

// TestControlRejectsBadInput: a control that is not valid JSON, asks for
// nothing or leaves the bounds is refused with a 400 that says why, and
// changes nothing.
func TestControlRejectsBadInput(t *testing.T) {
	front := fakeses.New(fakeses.Options{Moto: "http://127.0.0.1:1"})
	srv := httptest.NewServer(front)
	defer srv.Close()
	const kept = `{"fail":[{"status":503,"code":"ServiceUnavailable"}]}`
	if status, body := do(t, srv.URL, http.MethodPost, "/_control", kept); status != http.StatusOK {
		t.Fatalf("control %s: %d %s", kept, status, body)
	}
	const want = `{"queued":[{"status":503,"code":"ServiceUnavailable"}],"fail_always":null}`

	many := `{"fail":[` + strings.Repeat(`{"status":503,"code":"X"},`, 100) + `{"status":503,"code":"X"}]}`
	tests := []struct{ name, body, says string }{
		{"not JSON", `fail please`, "decode control JSON"},
		{"empty", ``, "decode control JSON"},
		{"two objects", `{"reset":true}{"reset":true}`, "unexpected data after the object"},
		{"unknown field", `{"fail":[{"status":503,"code":"ServiceUnavailable","latency_ms":5}]}`, "unknown field"},
		{"nothing asked", `{}`, "set fail, fail_always, sending_paused or reset"},
		{"reset false alone", `{"reset":false,"fail":[]}`, "set fail, fail_always, sending_paused or reset"},
		{"status below 400", `{"fail":[{"status":302,"code":"Found"}]}`, "status must be between 400 and 599"},
		{"status above 599", `{"fail":[{"status":600,"code":"X"}]}`, "status must be between 400 and 599"},
		{"no status", `{"fail":[{"code":"ServiceUnavailable"}]}`, "status must be between 400 and 599"},
		{"no code", `{"fail":[{"status":503}]}`, "code is required"},
		{"code of two words", `{"fail":[{"status":503,"code":"Service Unavailable"}]}`, "code must be one word"},
		{"code breaking the header", `{"fail":[{"status":503,"code":"X\r\nSet-Cookie: a"}]}`, "code must be one word"},
		{"code too long", `{"fail":[{"status":503,"code":"` + strings.Repeat("X", 101) + `"}]}`, "code must be one word"},
		{"negative retry", `{"fail":[{"status":429,"code":"TooManyRequestsException","retry_after_s":-1}]}`, "retry_after_s must be between 0 and 3600"},
		{"retry too long", `{"fail":[{"status":429,"code":"TooManyRequestsException","retry_after_s":3601}]}`, "retry_after_s must be between 0 and 3600"},
		{"bad second failure", `{"fail":[{"status":503,"code":"X"},{"status":200,"code":"X"}]}`, "fail[1]"},
		{"bad fail_always", `{"fail_always":{"status":503}}`, "fail_always: code is required"},
		{"queue overflow", many, "at most 100 failures"},
		{"string status", `{"fail":[{"status":"503","code":"X"}]}`, "cannot unmarshal"},
		{"too big", `{"fail":[{"status":503,"code":"` + strings.Repeat("X", 70<<10) + `"}]}`, "decode control JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, srv.URL, http.MethodPost, "/_control", tt.body)
			var answer struct{ Message string }
			if err := json.Unmarshal([]byte(body), &answer); err != nil {
				t.Fatalf("answer is not JSON: %s", body)
			}
			if status != http.StatusBadRequest || !strings.Contains(answer.Message, tt.says) {
				t.Errorf("got %d %q, want 400 saying %q", status, answer.Message, tt.says)
			}
			if status, body := do(t, srv.URL, http.MethodGet, "/_control", ""); status != http.StatusOK || body != want {
				t.Errorf("the failures pending changed: %d %s", status, body)
			}
		})
	}
	if err := front.Apply(fakeses.Control{Fail: []fakeses.Failure{{Status: 503}}}); err == nil {
		t.Error("Apply accepted a failure without a code")
	}
	if status, _ := do(t, srv.URL, http.MethodPut, "/_control", kept); status != http.StatusMethodNotAllowed {
		t.Errorf("PUT /_control: %d, want 405", status)
	}
}

// TestApplyQueuesInOrder: failures queue behind those waiting, a reset
// clears before the rest of its control applies, and the queue's bound
// counts what stays.
func TestApplyQueuesInOrder(t *testing.T) {
	front := fakeses.New(fakeses.Options{Moto: "http://127.0.0.1:1"})
	srv := httptest.NewServer(front)
	defer srv.Close()
	steps := []struct {
		control fakeses.Control
		want    string
	}{
		{fakeses.Control{Fail: []fakeses.Failure{{Status: 503, Code: "A"}}}, `{"queued":[{"status":503,"code":"A"}],"fail_always":null}`},
		{fakeses.Control{Fail: []fakeses.Failure{{Status: 429, Code: "B", RetryAfterS: 9}}}, `{"queued":[{"status":503,"code":"A"},{"status":429,"code":"B","retry_after_s":9}],"fail_always":null}`},
		{fakeses.Control{Reset: true, Fail: []fakeses.Failure{{Status: 400, Code: "C"}}, FailAlways: &fakeses.Failure{Status: 500, Code: "D"}}, `{"queued":[{"status":400,"code":"C"}],"fail_always":{"status":500,"code":"D"}}`},
		{fakeses.Control{Reset: true, Fail: make100()}, ``},
	}
	for i, s := range steps {
		if err := front.Apply(s.control); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if s.want == "" {
			continue
		}
		if _, body := do(t, srv.URL, http.MethodGet, "/_control", ""); body != s.want {
			t.Errorf("step %d: pending %s, want %s", i, body, s.want)
		}
	}
	if err := front.Apply(fakeses.Control{Fail: []fakeses.Failure{{Status: 503, Code: "E"}}}); err == nil {
		t.Error("a 101st queued failure was accepted")
	}
}

func make100() []fakeses.Failure {
	out := make([]fakeses.Failure, 100)
	for i := range out {
		out[i] = fakeses.Failure{Status: 503, Code: "ServiceUnavailable"}
	}
	return out
}

// TestMotoUnreachable: when moto does not answer, SendEmail gets a 502 the
// SDK treats as transient, and the call is recorded.
func TestMotoUnreachable(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for _, moto := range []string{dead.URL, "not a URL", ""} {
		front := fakeses.New(fakeses.Options{Moto: moto})
		srv := httptest.NewServer(front)
		status, body := do(t, srv.URL, http.MethodPost, "/v2/email/outbound-emails", `{"FromEmailAddress":"a@example.com"}`)
		srv.Close()
		if status != http.StatusBadGateway || !strings.Contains(body, "could not reach moto") {
			t.Errorf("moto %q: SendEmail answered %d %s, want 502", moto, status, body)
		}
		if calls := front.Calls(); len(calls) != 1 || calls[0].Status != http.StatusBadGateway || calls[0].Injected {
			t.Errorf("moto %q: calls %+v", moto, calls)
		}
	}
}
