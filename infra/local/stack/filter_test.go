package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
)

// The content filter end to end (SPEC_ORACLE_SOS_FILTER): with the fake
// model leaking internal terms, a replaceable leak reaches the page and the
// email cleaned; a quarantine-class leak reaches neither, the customer sees
// "under review" and gets the review notice, and the operator the alert,
// which the stack's tap on the alerts topic prints.
func TestLeakingModelIsFilteredEndToEnd(t *testing.T) {
	t.Parallel()
	o := options(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := sqs.NewFromConfig(s.AWS)

	t.Run("written again", func(t *testing.T) {
		// The first writing leaks; gate 1 has the model write it again,
		// and the second is clean: the customer gets it, nobody reviews.
		post(t, s.GeminiURL+"/_control", `{"leak_terms":["CSDM"]}`)
		addr := fmt.Sprintf("filter-rewrite-%d@example.com", time.Now().UnixNano())
		session := pay(t, s, "full", "Should I open a second bakery across town?", addr)
		waitReady(t, s.APIURL, session)
		_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+session))
		if strings.Contains(string(body), "CSDM") {
			t.Fatalf("the verdict API served the leak: %s", body)
		}
		drained(ctx, t, q, s)
		mails := mailbox(t, s.APIURL, addr)
		if len(mails) != 1 || strings.Contains(mails[0].Text+mails[0].HTML, "CSDM") {
			t.Fatalf("emails %+v, want one verdict without the leak", mails)
		}
		if alerts := s.Alerts(); slices.ContainsFunc(alerts, func(a string) bool { return strings.Contains(a, "VERDICT_QUARANTINED") }) {
			t.Fatalf("alerts %q: a verdict written again is no quarantine", alerts)
		}
	})

	t.Run("replaced", func(t *testing.T) {
		// Both writings leak: the second is repaired.
		post(t, s.GeminiURL+"/_control", `{"leak_terms":["TMM"],"calls":2}`)
		addr := fmt.Sprintf("filter-replace-%d@example.com", time.Now().UnixNano())
		session := pay(t, s, "quick", "Should I open a second bakery across town?", addr)
		waitReady(t, s.APIURL, session)
		_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+session))
		var got struct {
			Verdict struct{ Summary string } `json:"verdict"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got.Verdict.Summary, "TMM") || !strings.Contains(got.Verdict.Summary, "our analysis") {
			t.Fatalf("the page's summary %q, want the leak replaced", got.Verdict.Summary)
		}
		drained(ctx, t, q, s)
		mails := mailbox(t, s.APIURL, addr)
		if len(mails) != 1 || strings.Contains(mails[0].Text+mails[0].HTML, "TMM") || !strings.Contains(mails[0].Text, "our analysis") {
			t.Fatalf("emails %+v, want one verdict with the leak replaced", mails)
		}
	})

	t.Run("quarantined", func(t *testing.T) {
		post(t, s.GeminiURL+"/_control", `{"leak_terms":["CSDM"],"calls":2}`)
		addr := fmt.Sprintf("filter-quarantine-%d@example.com", time.Now().UnixNano())
		session := pay(t, s, "full", "Should I open a second bakery across town?", addr)
		var status int
		var body []byte
		if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
			status, body, _ = send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+session))
			if strings.Contains(string(body), "CSDM") {
				t.Fatalf("the verdict API served the leak: %s", body)
			}
			if status != http.StatusAccepted {
				t.Fatalf("verdict API: %d %s, want 202 until under review", status, body)
			}
			return strings.Contains(string(body), `"status":"under_review"`)
		}) {
			t.Fatalf("verdict API: %d %s, want 202 until under review", status, body)
		}
		drained(ctx, t, q, s)
		mails := mailbox(t, s.APIURL, addr)
		if len(mails) != 1 || !strings.Contains(mails[0].Subject, "under review") || strings.Contains(mails[0].Text+mails[0].HTML, "CSDM") {
			t.Fatalf("emails %+v, want only the review notice", mails)
		}
		i := slices.IndexFunc(s.Alerts(), func(a string) bool {
			return strings.Contains(a, "CRITICAL") && strings.Contains(a, "| VERDICT_QUARANTINED |") && strings.Contains(a, "cat3.csdm")
		})
		if i < 0 {
			t.Fatalf("alerts %q, want the CRITICAL quarantine alert", s.Alerts())
		}
		if logs := o.Log.(*testkit.Buffer).String(); !strings.Contains(logs, "ALERT: "+s.Alerts()[i]+"\n") {
			t.Errorf("the alert was not printed for the operator:\n%s", logs)
		}
	})
}
