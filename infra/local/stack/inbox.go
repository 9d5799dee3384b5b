package stack

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/infra/local/poller"
	"42sisters.ai/oracle/shared/inbox"
)

// maxReceived bounds a message posted to /_local/inbox: SES receives at
// most 40 MB, more than a hand-made message needs.
const maxReceived = 10 << 20

// receiving stands in for mail arriving at the support address, at
// /_local/inbox: a message posted there (the raw .eml) is stored in the
// inbox bucket under inbound/<id> and the inbox function invoked with the
// receipt event SES would send, as the template's receipt rule does in
// AWS: asynchronously, with Lambda's retries and the on-failure destination
// of the function's EventInvokeConfig. It answers 202 with the message's
// id at once, as SES accepts the mail. With MAIL_TRANSPORT=graph the message
// is delivered to the fake Graph's mailbox instead, for the function's
// next poll (every 2 minutes) to read.
type receiving struct {
	messages *inbox.Messages
	function poller.Invoker
	support  string
	graph    string // the fake Graph's root, with MAIL_TRANSPORT=graph
}

func (rc receiving) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST the raw message: curl -X POST localhost:3000/_local/inbox --data-binary @message.eml", http.StatusMethodNotAllowed)
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReceived))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("the message is larger than %d bytes", maxReceived), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, "read the message: "+err.Error(), http.StatusBadRequest)
		return
	case len(raw) == 0:
		http.Error(w, "no message: POST the raw .eml as the body", http.StatusBadRequest)
		return
	}
	if rc.graph != "" {
		resp, err := http.Post(rc.graph+"/_inbox/"+url.PathEscape(rc.support), "message/rfc822", bytes.NewReader(raw))
		if err != nil {
			http.Error(w, "deliver to the Graph mailbox: "+err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			http.Error(w, fmt.Sprintf("deliver to the Graph mailbox: %d", resp.StatusCode), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]string{"delivered_to": "the fake Graph mailbox " + rc.support,
			"read_by": "the inbox function's next poll (every 2 minutes)"})
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := "local-" + hex.EncodeToString(b)
	if err := rc.messages.Put(r.Context(), inbox.Prefix+id, raw); err != nil {
		http.Error(w, "store the message: "+err.Error(), http.StatusBadGateway)
		return
	}
	payload, _ := json.Marshal(receiptEvent(id, rc.support, time.Now()))
	if _, err := rc.function.Invoke(r.Context(), payload); err != nil {
		http.Error(w, "the inbox function failed: "+err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]string{"message_id": id, "stored": inbox.Prefix + id})
}

// receiptEvent is SES's receipt event for the message stored as id, with
// the verdicts of a clean message.
func receiptEvent(id, to string, at time.Time) events.SimpleEmailEvent {
	pass := events.SimpleEmailVerdict{Status: "PASS"}
	return events.SimpleEmailEvent{Records: []events.SimpleEmailRecord{{
		EventSource:  "aws:ses",
		EventVersion: "1.0",
		SES: events.SimpleEmailService{
			Mail: events.SimpleEmailMessage{MessageID: id, Timestamp: at.UTC(), Destination: []string{to}},
			Receipt: events.SimpleEmailReceipt{Timestamp: at.UTC(), Recipients: []string{to},
				SpamVerdict: pass, VirusVerdict: pass, SPFVerdict: pass, DKIMVerdict: pass, DMARCVerdict: pass,
				Action: events.SimpleEmailReceiptAction{Type: "Lambda", InvocationType: "Event"}},
		},
	}}}
}
