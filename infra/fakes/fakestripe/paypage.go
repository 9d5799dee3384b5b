package fakestripe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"42sisters.ai/oracle/shared/oracle"
)

// maxPayForm bounds the pay page's form body.
const maxPayForm = 64 << 10

const pageHead = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Fake Stripe Checkout</title>
<style>
body{font-family:system-ui,sans-serif;max-width:30rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a;line-height:1.4}
.test{background:#fff3cd;padding:.4rem .6rem;font-size:.85rem}
label{display:block;margin-top:1rem;font-weight:600}
input[type=email],textarea{display:block;width:100%;box-sizing:border-box;padding:.5rem;font:inherit}
.check{font-weight:normal}
button{margin-top:1.5rem;padding:.6rem 2rem;font:inherit;cursor:pointer}
.error{color:#b00020}
</style>
</head>
<body>
<p class="test">Fake Stripe Checkout, test mode: no real payment is taken.</p>
`

var (
	payTemplate = template.Must(template.New("pay").Parse(pageHead + `<h1>{{.Title}}</h1>
<ul>{{range .Items}}
<li>{{.Name}}{{if gt .Quantity 1}} × {{.Quantity}}{{end}}: {{.Amount}}</li>{{end}}
</ul>
<p>Total: <strong>{{.Total}}</strong>{{if .Interval}} every {{.Interval}}{{end}}</p>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>
{{end}}<form method="post" action="/pay/{{.ID}}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required value="{{.Email}}">
{{range .Fields}}<label for="field-{{.Key}}">{{.Label}}</label>
<textarea id="field-{{.Key}}" name="{{.Key}}" rows="4" maxlength="{{.MaxLength}}"{{if .Required}} required{{end}}>{{.Value}}</textarea>
{{end}}{{if .Interval}}<button type="submit">Subscribe</button>{{else}}<label class="check"><input type="checkbox" name="delayed" value="1"{{if .Delayed}} checked{{end}}> Simulate a delayed payment method (the payment settles after checkout)</label>
<button type="submit">Pay</button>{{end}}
</form>
{{if .CancelURL}}<p><a href="{{.CancelURL}}">Cancel</a></p>
{{end}}</body>
</html>
`))
	messageTemplate = template.Must(template.New("message").Parse(pageHead + `<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
</body>
</html>
`))
)

type payPageData struct {
	ID        string
	Title     string
	Items     []payPageItem
	Total     string
	Email     string
	Fields    []payPageField
	Delayed   bool
	Interval  string // a subscription's billing interval, such as "month"; empty for a payment
	CancelURL string
	Error     string
}

type payPageItem struct {
	Name     string
	Quantity int64
	Amount   string
}

type payPageField struct {
	Key       string
	Label     string
	MaxLength int
	Required  bool
	Value     string
}

type messagePageData struct {
	Title   string
	Message string
}

// payPage serves GET /pay/{id}.
func (s *Server) payPage(w http.ResponseWriter, r *http.Request) {
	s.renderPayPage(w, r.PathValue("id"), http.StatusOK, payInput{}, "")
}

// pay serves POST /pay/{id}: it completes the session, delivers its events
// before answering, then sends the customer to the success URL.
func (s *Server) pay(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	r.Body = http.MaxBytesReader(w, r.Body, maxPayForm)
	if err := r.ParseForm(); err != nil {
		s.renderMessage(w, http.StatusBadRequest, "Bad request", "The payment form could not be read.")
		return
	}
	in := payInput{
		email:   strings.TrimSpace(r.PostForm.Get("email")),
		fields:  make(map[string]string),
		delayed: r.PostForm.Get("delayed") == "1",
	}
	for key, vals := range r.PostForm {
		in.fields[key] = vals[0]
	}

	p, err := s.complete(id, in)
	var fe *formError
	switch {
	case errors.As(err, &fe):
		s.renderPayPage(w, id, http.StatusBadRequest, in, fe.msg)
		return
	case errors.Is(err, errUnknownSession):
		s.renderUnknownSession(w)
		return
	case errors.Is(err, errSessionDone):
		s.renderMessage(w, http.StatusConflict, "Already paid", "This checkout session is already complete.")
		return
	case errors.Is(err, errSessionExpired):
		s.renderExpired(w)
		return
	case err != nil:
		s.log.Error("fakestripe: pay", "session", id, "err", err)
		s.renderMessage(w, http.StatusInternalServerError, "Error", "The fake Stripe failed to complete this payment.")
		return
	}

	// The customer's browser may go away; the deliveries still happen.
	if err := s.finish(context.WithoutCancel(r.Context()), p); err != nil {
		s.log.Error("fakestripe: pay", "session", id, "err", err)
		s.renderMessage(w, http.StatusInternalServerError, "Error", "The fake Stripe failed to settle this payment.")
		return
	}
	http.Redirect(w, r, s.redirectURL(r, p), http.StatusSeeOther)
}

// link serves GET /link/{tier}: it opens a Payment Link style session and
// sends the customer to its pay page.
func (s *Server) link(w http.ResponseWriter, r *http.Request) {
	tier, err := oracle.ParseTier(r.PathValue("tier"))
	if err != nil {
		s.renderMessage(w, http.StatusNotFound, "Not found", "There is no payment link for this product.")
		return
	}
	rec, err := s.newLinkSession(r, tier)
	if err != nil {
		s.log.Error("fakestripe: payment link", "tier", tier, "err", err)
		s.renderMessage(w, http.StatusInternalServerError, "Error", "The fake Stripe failed to open this payment link.")
		return
	}
	http.Redirect(w, r, "/pay/"+rec.s.ID, http.StatusSeeOther)
}

// renderPayPage shows the session's pay form, with in and msg after a
// rejected submission.
func (s *Server) renderPayPage(w http.ResponseWriter, id string, status int, in payInput, msg string) {
	s.mu.Lock()
	rec, ok := s.sessions[id]
	var state string
	var d payPageData
	if ok {
		state = rec.s.Status
	}
	if state == sessionStatusOpen {
		d = payPageFor(rec, in, msg)
		if cust, ok := s.customers[deref(rec.s.Customer)]; ok && d.Email == "" {
			d.Email = cust.c.Email
		}
	}
	s.mu.Unlock()
	switch {
	case !ok:
		s.renderUnknownSession(w)
	case state == sessionStatusExpired:
		s.renderExpired(w)
	case state != sessionStatusOpen:
		s.renderMessage(w, http.StatusOK, "Payment complete", "This checkout session is already complete.")
	default:
		s.render(w, status, payTemplate, d)
	}
}

// payPageFor builds the pay form of rec. The caller holds s.mu.
func payPageFor(rec *sessionRecord, in payInput, msg string) payPageData {
	d := payPageData{
		ID:      rec.s.ID,
		Total:   formatAmount(rec.s.AmountTotal, rec.s.Currency),
		Email:   in.email,
		Delayed: in.delayed,
		Error:   msg,
	}
	if d.Email == "" && rec.s.CustomerEmail != nil {
		d.Email = *rec.s.CustomerEmail
	}
	if rec.s.CancelURL != nil {
		d.CancelURL = *rec.s.CancelURL
	}
	names := make([]string, len(rec.items))
	for i, it := range rec.items {
		names[i] = it.Name
		d.Items = append(d.Items, payPageItem{Name: it.Name, Quantity: it.Quantity, Amount: formatAmount(it.UnitAmount*it.Quantity, it.Currency)})
	}
	d.Title = strings.Join(names, ", ")
	if it := rec.items[0]; it.price != nil && it.price.p.Recurring != nil {
		d.Interval = it.price.p.Recurring.Interval
		if n := it.price.p.Recurring.IntervalCount; n > 1 {
			d.Interval = fmt.Sprintf("%d %ss", n, d.Interval)
		}
	}
	for _, f := range rec.s.CustomFields {
		d.Fields = append(d.Fields, payPageField{
			Key:       f.Key,
			Label:     f.Label.Custom,
			MaxLength: f.Text.MaximumLength,
			Required:  !f.Optional,
			Value:     in.fields[f.Key],
		})
	}
	return d
}

// renderExpired answers 410: the session can never be paid again.
func (s *Server) renderExpired(w http.ResponseWriter) {
	s.renderMessage(w, http.StatusGone, "Session expired", "This checkout session has expired.")
}

func (s *Server) renderUnknownSession(w http.ResponseWriter) {
	s.renderMessage(w, http.StatusNotFound, "Not found", "This checkout session does not exist.")
}

func (s *Server) renderMessage(w http.ResponseWriter, status int, title, msg string) {
	s.render(w, status, messageTemplate, messagePageData{Title: title, Message: msg})
}

// render executes t into a buffer first, so that a template error becomes a
// clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, status int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		s.log.Error("fakestripe: render page", "template", t.Name(), "err", fmt.Errorf("execute template: %w", err))
		http.Error(w, "fake Stripe: page rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	// A write error means the browser went away; there is no one to tell.
	_, _ = w.Write(buf.Bytes())
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// formatAmount renders an amount in a currency's minor unit, e.g. "1.00 CAD".
func formatAmount(amount int64, currency string) string {
	cur := strings.ToUpper(currency)
	if zeroDecimal[currency] {
		return fmt.Sprintf("%d %s", amount, cur)
	}
	return fmt.Sprintf("%d.%02d %s", amount/100, amount%100, cur)
}
