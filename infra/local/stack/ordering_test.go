package stack_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// dispatchWatch checks PRODUCT_TIERS VC-4 on the running stack: whenever a
// verdict email is about to be handed to the mailer, the session's result
// page and the verdict API already answer 200 with the stored verdict; and
// afterwards, for every session, the verdict was written before the email
// was sent.
type dispatchWatch struct {
	api    string
	client *http.Client

	mu       sync.Mutex
	checked  map[string]time.Time // session → when its mail job was checked
	problems []string
}

// watchDispatch installs the watch on the stack's options.
func watchDispatch(o *stack.Options) *dispatchWatch {
	w := &dispatchWatch{
		api:     fmt.Sprintf("http://localhost:%d", o.Port),
		client:  &http.Client{Timeout: 20 * time.Second},
		checked: map[string]time.Time{},
	}
	o.BeforeDelivery = w.see
	return w
}

func (w *dispatchWatch) see(q string, batch events.SQSEvent) {
	if q != "MailQueue" {
		return
	}
	for _, m := range batch.Records {
		job, err := queue.Parse(m.Body)
		if err != nil || job.Kind != oracle.MailVerdict {
			continue
		}
		at := time.Now()
		problem := w.answers(job.SessionID)
		w.mu.Lock()
		if problem != "" {
			w.problems = append(w.problems, problem)
		}
		if _, ok := w.checked[job.SessionID]; !ok {
			w.checked[job.SessionID] = at
		}
		w.mu.Unlock()
	}
}

// answers returns what is wrong with the session's link and API, if anything.
func (w *dispatchWatch) answers(session string) string {
	// The result page at its own path (PRODUCT_TIERS INV-4) and where the
	// emails link.
	for _, u := range []string{"/result/" + session, "/oracle/result?session_id=" + session, "/api/verdict?session_id=" + session} {
		resp, err := w.client.Get(w.api + u)
		if err != nil {
			return fmt.Sprintf("%s before the email: %v", u, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Sprintf("%s before the email: %v", u, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%s before the email: %d", u, resp.StatusCode)
		}
		if strings.HasPrefix(u, "/api/") && !strings.Contains(string(body), `"status":"ready"`) {
			return fmt.Sprintf("%s before the email: %.200s, want the ready verdict", u, body)
		}
	}
	return ""
}

// verify checks every session the test completed: its mail job was seen
// and answered 200 before the mailer ran, and the order's verdict was
// written before its email was recorded as sent.
func (w *dispatchWatch) verify(t *testing.T, s *stack.Stack, sessions []string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.problems {
		t.Errorf("VC-4: %s", p)
	}
	for _, id := range sessions {
		seen, ok := w.checked[id]
		if !ok {
			t.Errorf("VC-4: %s: its verdict email was never seen before dispatch", id)
			continue
		}
		item := orderItem(t, s, id)
		stored, sent := timeAttr(item, "generated_at"), timeAttr(item, "mail_verdict_sent_at")
		switch {
		case stored.IsZero() || sent.IsZero():
			t.Errorf("VC-4: %s: generated_at %v, mail_verdict_sent_at %v, want both", id, stored, sent)
		case !stored.Before(seen) || !seen.Before(sent):
			t.Errorf("VC-4: %s: verdict stored %v, link checked %v, email sent %v: want them in that order",
				id, stored.Format(time.RFC3339Nano), seen.Format(time.RFC3339Nano), sent.Format(time.RFC3339Nano))
		}
	}
}

func timeAttr(item map[string]ddbtypes.AttributeValue, name string) time.Time {
	v, ok := item[name].(*ddbtypes.AttributeValueMemberS)
	if !ok {
		return time.Time{}
	}
	at, err := time.Parse(time.RFC3339Nano, v.Value)
	if err != nil {
		return time.Time{}
	}
	return at
}
