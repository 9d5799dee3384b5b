package mail_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakegraph"
	"42sisters.ai/oracle/shared/mail"
)

// The mailbox reads: the unread messages of a window, every page of them,
// oldest first, and each one's MIME as delivered.
func TestGraphReadsTheUnreadMessagesAndTheirMIME(t *testing.T) {
	fx := newGraphFixture(t, fakegraph.Options{}, nil)
	for i := range 60 { // more than one page of 50
		raw := fmt.Sprintf("From: a%d@example.com\r\nMessage-ID: <m%d@example.com>\r\nSubject: s\r\n\r\nbody %d\r\n", i, i, i)
		at := graphNow.Add(-time.Duration(60-i) * time.Minute).Format(time.RFC3339)
		resp, err := http.Post(fx.url+"/_inbox/"+url.PathEscape(graphSender)+"?received="+url.QueryEscape(at), "message/rfc822", strings.NewReader(raw))
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("deliver: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	ctx := context.Background()
	got, err := fx.graph.Unread(ctx, graphSender, graphNow.Add(-55*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 55 || got[0].InternetMessageID != "<m5@example.com>" || got[54].InternetMessageID != "<m59@example.com>" {
		t.Fatalf("listed %d, first %+v", len(got), got[0])
	}
	raw, err := fx.graph.MIME(ctx, graphSender, got[0].ID)
	if err != nil || !strings.Contains(string(raw), "body 5") {
		t.Fatalf("MIME: %q %v", raw, err)
	}
	if _, err := fx.graph.MIME(ctx, graphSender, "AAMkmissing="); mail.ClassOf(err) != mail.Blocked {
		t.Fatalf("a missing message: %v", err)
	}
}

// A next link that leaves Graph is not followed: the token would go with it.
func TestGraphFollowsNoNextLinkAwayFromGraph(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/token") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"t","token_type":"Bearer","expires_in":3600}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"value":[],"@odata.nextLink":"https://elsewhere.example/steal"}`)
	}))
	t.Cleanup(srv.Close)
	g, err := mail.NewGraph(mail.GraphConfig{TenantID: "t", ClientID: "c", ClientSecret: "s", Sender: graphSender,
		APIBase: srv.URL + "/v1.0", LoginBase: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Unread(context.Background(), graphSender, graphNow)
	var e *mail.Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "leaves Graph") {
		t.Fatalf("err = %v", err)
	}
}
