package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sosfilter"
)

// renderAll renders every page in every form a person can receive it:
// the chat page (its states all in one rendering, hidden until its script
// shows them), the sign-in link's page and each of its refusals.
func renderAll() []page {
	h := &Handler{Site: defaultSite, Support: oracle.SupportAddress, DailyCap: defaultDailyCap, RetentionDays: defaultRetentionDays,
		Log: obs.NewLogger(io.Discard, "ERROR")}
	var r httpapi.Request
	back := r
	back.QueryStringParameters = map[string]string{"subscribed": "1"}
	pages := []page{
		h.chatPage(r),
		h.chatPage(back),
		h.problem(http.StatusMethodNotAllowed, "This request is not supported", "This address shows a page; it does not accept anything sent to it."),
		h.signInProblem(http.StatusBadRequest, "This sign-in link is not valid", "x"),
		h.signInPage(context.Background(), link(http.MethodGet, "q3Zx9vB0kLm4Rt7YwE2sN8aHc5Jd1Pf6Gu0Ii3Oo9Kl")),
	}
	for _, err := range []error{chatsession.ErrNotFromSite, chat.ErrSignInInvalid, chat.ErrSignInUsed, chat.ErrSignInExpired, chatsession.ErrFormType, chatsession.ErrFormTooLarge, errors.New("the table is down")} {
		pages = append(pages, h.signInRefused(context.Background(), err))
	}
	return pages
}

// Every word the chat can show a person passes the content filter: each
// rendered page as HTML, every template and asset as written (hidden
// states and the script included), and every string literal of the
// package (the API's answers and the sign-in link pages).
func TestEveryTextPassesTheContentFilter(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range renderAll() {
		if p.Status == http.StatusInternalServerError {
			t.Fatalf("%s did not render", p.Name)
		}
		if rep := f.Mail("", "", p.Body, sosfilter.Own{}); rep.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", p.Name, rep.Action, rep.Terms())
		}
	}
	for path, text := range testkit.TemplateTexts(t, files, "templates") {
		if r := f.Text(text); r.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", path, r.Action, r.Terms())
		}
	}
	testkit.LiteralsPassTheFilter(t, ".")
}
