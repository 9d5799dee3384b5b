package mail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Reading a mailbox through Graph, for the support inbox when it stays on
// Microsoft 365: the same app and token as sendMail, with the Mail.Read
// application permission. The reads never mark, move or delete a message.

// InboxMessage is a message as a mailbox listing gives it.
type InboxMessage struct {
	ID                string    `json:"id"`                // Graph's id, for reading its MIME
	InternetMessageID string    `json:"internetMessageId"` // its Message-ID header, with brackets
	Received          time.Time `json:"receivedDateTime"`
}

// maxListed bounds how many unread messages one listing returns: a poll
// every two minutes never needs more, and the rest wait for the next.
const maxListed = 500

// maxMIME bounds a message read: Graph's limit on a message with its
// attachments is 150 MB; a support message the service keeps is far less.
const maxMIME = 40 << 20

// Unread lists the unread messages in mailbox's Inbox folder received since
// then, oldest first, at most maxListed. Its errors are *Error, classified
// as a send's are, and name neither the mailbox nor a message.
func (g *Graph) Unread(ctx context.Context, mailbox string, since time.Time) ([]InboxMessage, error) {
	q := url.Values{}
	// Graph wants $orderby's property in $filter too, and first.
	q.Set("$filter", "receivedDateTime ge "+since.UTC().Format(time.RFC3339)+" and isRead eq false")
	q.Set("$orderby", "receivedDateTime asc")
	q.Set("$select", "id,internetMessageId,receivedDateTime")
	q.Set("$top", "50")
	next := g.apiBase + "/users/" + url.PathEscape(mailbox) + "/mailFolders/inbox/messages?" + q.Encode()
	var out []InboxMessage
	for next != "" && len(out) < maxListed {
		// A next link must stay on Graph: the token goes with it.
		if !strings.HasPrefix(next, g.apiBase+"/") {
			return nil, &Error{Transport: "Graph", Class: Transient, reason: "a next link leaves Graph's API"}
		}
		resp, err := g.get(ctx, next)
		if err != nil {
			return nil, err
		}
		var page struct {
			Value    []InboxMessage `json:"value"`
			NextLink string         `json:"@odata.nextLink"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody*16)).Decode(&page)
		discard(resp)
		if err != nil {
			return nil, transient("Graph", fmt.Errorf("read the mailbox listing: %w", err))
		}
		out = append(out, page.Value...)
		next = page.NextLink
	}
	return out, nil
}

// MIME returns the message whose Graph id is id, as MIME.
func (g *Graph) MIME(ctx context.Context, mailbox, id string) ([]byte, error) {
	resp, err := g.get(ctx, g.apiBase+"/users/"+url.PathEscape(mailbox)+"/messages/"+url.PathEscape(id)+"/$value")
	if err != nil {
		return nil, err
	}
	defer discard(resp)
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMIME+1))
	if err != nil {
		return nil, transient("Graph", fmt.Errorf("read a message: %w", err))
	}
	if len(raw) > maxMIME {
		return nil, refused(fmt.Sprintf("a message larger than %d bytes", maxMIME))
	}
	return raw, nil
}

// get makes one authenticated GET, once more with a new token after a 401,
// and returns a 2xx answer for the caller to read and close.
func (g *Graph) get(ctx context.Context, u string) (*http.Response, error) {
	var stale *oauth2.Token
	for attempt := 1; ; attempt++ {
		tok, err := g.token(ctx, stale)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, transient("Graph", err)
		}
		tok.SetAuthHeader(req)
		resp, err := g.http.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // the URL names the mailbox
			}
			return nil, transient("Graph", err)
		}
		if resp.StatusCode == http.StatusUnauthorized && attempt == 1 {
			discard(resp)
			stale = tok
			continue
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		return nil, g.classify(resp)
	}
}
