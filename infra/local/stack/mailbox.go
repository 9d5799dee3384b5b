package stack

import (
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	fakegraph "42sisters.ai/oracle/infra/fakes/fakegraph"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/shared/stripex"
)

// mailboxPage lists what the mailer sent through moto's SES and, when
// email goes through Graph, what the fake Graph accepted: the local
// stack's mailbox, at /_local/mail on the front door (JSON for tools and
// tests, a small HTML view for people; ?format=json or Accept decides).
// It shows the customers' messages; what the smoke test sent to its
// address, which reaches nobody in AWS, is listed apart (?smoke=1).
type mailboxPage struct {
	moto  string            // moto's endpoint
	graph *fakegraph.Server // nil unless email goes through Graph
}

type mailJSON struct {
	To      []string  `json:"to"`
	From    string    `json:"from"`
	Subject string    `json:"subject"`
	Text    string    `json:"text"`
	HTML    string    `json:"html"`
	At      time.Time `json:"at"`
}

var mailboxHTML = template.Must(template.New("mailbox").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Local mailbox</title>
<style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem;max-width:60rem}article{border:1px solid #ccc;border-radius:6px;padding:1rem;margin:1rem 0}pre{white-space:pre-wrap}</style>
</head><body><h1>Local mailbox{{if .Smoke}}: the smoke test's{{end}}</h1><p>{{len .Messages}} message(s), newest first. JSON: <a href="?format=json{{if .Smoke}}&amp;smoke=1{{end}}">?format=json</a>.
{{if .Smoke}}<a href="?">The customers' messages</a>.{{else}}What the smoke test sent to its own address is apart: <a href="?smoke=1">?smoke=1</a>.{{end}}
An order's spans, as a waterfall: <a href="/_local/trace/">/_local/trace/</a>.</p>
{{range .Messages}}<article><h2>{{.Subject}}</h2><p>To {{range .To}}{{.}} {{end}}· from {{.From}} · {{.At.Format "2006-01-02 15:04:05 MST"}}</p><pre>{{.Text}}</pre></article>{{end}}
</body></html>`))

func (m mailboxPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	sent, err := motoserver.Mailbox{}.Sent(r.Context(), m.moto)
	if err != nil {
		http.Error(w, "cannot read the mailbox: "+err.Error(), http.StatusBadGateway)
		return
	}
	if m.graph != nil {
		sent = append(sent, m.graph.Received()...)
		slices.SortStableFunc(sent, func(a, b motoserver.Sent) int { return a.At.Compare(b.At) })
	}
	wantSmoke := r.URL.Query().Get("smoke") == "1"
	out := make([]mailJSON, 0, len(sent))
	for i := len(sent) - 1; i >= 0; i-- {
		s := sent[i]
		if toSmoke(s.To) != wantSmoke {
			continue
		}
		out = append(out, mailJSON{To: s.To, From: s.From, Subject: s.Subject, Text: s.Text, HTML: s.HTML, At: s.At})
	}
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Get("format") == "json" || strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_ = mailboxHTML.Execute(w, mailboxView{Smoke: wantSmoke, Messages: out})
}

type mailboxView struct {
	Smoke    bool
	Messages []mailJSON
}

// toSmoke reports a message to the smoke test's address.
func toSmoke(to []string) bool {
	return slices.ContainsFunc(to, func(a string) bool { return strings.EqualFold(a, stripex.SmokeEmail) })
}
