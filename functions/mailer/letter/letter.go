// Package letter renders the customer-facing emails: the verdict letter of
// each tier, the silent-drop notice, the order notices (failure, review,
// divergence, payment review, refund), the support inbox's acknowledgement
// and Sisters Chat's emails (sign-in link, failed renewal), as plain text in the specs' exact
// format with an HTML alternative carrying the same content. The texts live
// in templates/ next to this file.
package letter

import (
	"embed"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"text/template"
	"time"
	"unicode"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/tmplrun"
)

// Brand is who the letters come from. A zero field takes its default.
type Brand struct {
	Name    string // the company name in subjects and signatures; default "42 Sisters AI"
	Sender  string // the From address; default oracle.SupportAddress
	Support string // the address printed in footers, where replies go; default oracle.SupportAddress
}

// DefaultBrand is the brand of SPEC_ORACLE_VERDICT_PIPELINE "Outputs 3".
func DefaultBrand() Brand { return Brand{}.withDefaults() }

func (b Brand) withDefaults() Brand {
	if b.Name == "" {
		b.Name = "42 Sisters AI"
	}
	if b.Sender == "" {
		b.Sender = oracle.SupportAddress
	}
	if b.Support == "" {
		b.Support = oracle.SupportAddress
	}
	return b
}

// From is the From header value: the brand's name and its sender address,
// e.g. `"42 Sisters AI" <oracle@42sisters.ai>`.
func (b Brand) From() string {
	b = b.withDefaults()
	return (&mail.Address{Name: b.Name, Address: b.Sender}).String()
}

// Message is a rendered email: the subject, the plain text (the specs'
// format) and its HTML alternative.
type Message struct {
	Subject string
	Text    string
	HTML    string
	// Own marks where the message shows the customer's submission back to
	// them: gate 2 reads the rest (sosfilter.Own).
	Own Own
}

// Own is where a message quotes the customer's own submission, as byte
// ranges [start, end) of its Text and of its HTML.
type Own struct {
	Text, HTML [][2]int
}

// The templates each letter starts from. Partials defined inside the files
// are reached from these; TestEveryTemplateIsUsed keeps it that way.
const (
	verdictSubject = "verdict subject"
	verdictText    = "verdict.txt"
	verdictHTML    = "verdict.html"
	noticeSubject  = "notice subject"
	noticeText     = "notice.txt"
	noticeHTML     = "notice.html"
)

// Notices about an order, each named for the template files it renders
// (<name>.txt with its "<name> subject", and <name>.html).
const (
	// Failed tells the customer the model could not answer within the
	// parking budget, with the refund text of SPEC_ORACLE_GEMINI_TIMEOUT.
	Failed = "failed"
	// Review tells the customer their verdict is held for review.
	Review = "review"
	// Divergence is SPEC_ORACLE_REGEN_CONSISTENCY's note on a regenerated
	// verdict that differs significantly from the emailed one.
	Divergence = "divergence"
	// PaymentReview tells the customer their order is held because the
	// amount paid is not the price of the tier chosen.
	PaymentReview = "payment_review"
	// Refund tells the customer their payment was refunded in full.
	Refund = "refund"
)

// Notices lists every order notice.
func Notices() []string { return []string{Failed, Review, Divergence, PaymentReview, Refund} }

// linkData is what the order notices show: the brand and the result page.
type linkData struct {
	Brand   Brand
	Subject string
	URL     string
}

// Notice renders the order notice name, which links to resultURL.
func Notice(b Brand, name, resultURL string) (Message, error) {
	if !slices.Contains(Notices(), name) {
		return Message{}, fmt.Errorf("no notice named %q", oracle.Clip(name, 32))
	}
	if err := checkURL(resultURL); err != nil {
		return Message{}, err
	}
	d := linkData{Brand: b.withDefaults(), URL: resultURL}
	subject, err := render(texts, name+" subject", d)
	if err != nil {
		return Message{}, err
	}
	d.Subject = subject
	return message(subject, name+".txt", name+".html", d)
}

//go:embed templates
var files embed.FS

// The templates are part of the binary, so a template that does not parse
// is a build defect that every test catches, not a run-time condition.
// They are run by tmplrun, not by text/template and html/template, whose
// executor's reflection would keep every AWS client operation in the
// mailer's bootstrap (see package tmplrun); the HTML is escaped as
// html/template escapes element text, which TestHTMLIsWhatHTMLTemplateWrites
// holds to.
var (
	textFuncs = template.FuncMap{
		"marker": marker,
		"inc":    func(i int) int { return i + 1 },
	}
	htmlFuncs = template.FuncMap{
		"colour": colour,
		"lines":  func(s string) []string { return strings.Split(s, "\n") },
	}
	texts runner = mustSet(template.New("").Funcs(textFuncs).ParseFS(files, "templates/*.txt"))(textFuncs, false)
	pages runner = mustSet(template.New("").Funcs(htmlFuncs).ParseFS(files, "templates/*.html"))(htmlFuncs, true)
)

// runner runs a set's templates (a *tmplrun.Set; in a test, html/template).
type runner interface {
	Execute(name string, data any) (string, error)
}

func mustSet(t *template.Template, err error) func(funcs template.FuncMap, html bool) *tmplrun.Set {
	return func(funcs template.FuncMap, html bool) *tmplrun.Set {
		if err != nil {
			panic(err)
		}
		s, err := tmplrun.New(t, funcs, html)
		if err != nil {
			panic(err)
		}
		return s
	}
}

// verdictStyle is how each verdict token is shown: the coloured marker of
// the plain text and the dot colour of the HTML (the result page's colours,
// SPEC_ORACLE_VERDICT_PIPELINE "Outputs 2").
var verdictStyle = map[oracle.Verdict]struct{ marker, colour string }{
	oracle.VerdictGreen: {"🟢", "#34d399"},
	oracle.VerdictAmber: {"🟡", "#f5c842"},
	oracle.VerdictRed:   {"🔴", "#ff4444"},
	oracle.VerdictNull:  {"⚪", "#555"},
}

func marker(v oracle.Verdict) string { return verdictStyle[v].marker }
func colour(v oracle.Verdict) string { return verdictStyle[v].colour }

// verdictData is what the verdict templates see. Which blocks a letter has
// is decided here from the tier, never from what the analysis happens to
// contain (SPEC_ORACLE_VERDICT_PIPELINE invariant 2: the tier selects the
// format).
type verdictData struct {
	Brand     Brand
	Subject   string
	TierName  string // "Quick Take"
	Title     string // "ORACLE VERDICT — QUICK TAKE"
	Underline string // ═ as wide as Title
	Rule      string // ─ as wide as Title
	Query     string
	Verdict   oracle.Verdict
	Summary   string
	Breakdown []dimension // full and strategy
	Strategy  *oracle.Strategy
	URL       string
}

type dimension struct {
	Name     string
	Verdict  oracle.Verdict
	Analysis string
}

// Verdict renders the verdict letter of tier for query and its analysis,
// with a link to the result page at resultURL. It fails when the analysis
// lacks what the tier's format shows (a summary; the five dimensions for
// full and strategy; the next step, alternative and three tests for
// strategy), when a verdict token is unknown, or when resultURL is not an
// absolute http(s) URL. Parts beyond the tier (a breakdown on a quick take)
// are not shown. Errors name the missing part and never quote the query or
// the analysis; they are permanent, since rendering is deterministic.
func Verdict(b Brand, tier oracle.Tier, query string, a oracle.Analysis, resultURL string) (Message, error) {
	b = b.withDefaults()
	if tier.Name() == "" {
		return Message{}, fmt.Errorf("verdict letter: unknown tier %q", oracle.Clip(string(tier), 32))
	}
	// The model's text is plain: markup in it would show as junk in both
	// parts, and gate 2 must read it as the reader does. Gate 1 already
	// took it out of every verdict it stored; a verdict stored before that
	// loses it here.
	a = sosfilter.UnmarkedAnalysis(a)
	d := verdictData{
		Brand:    b,
		TierName: tier.Name(),
		Title:    "ORACLE VERDICT — " + strings.ToUpper(tier.Name()),
		Query:    clean(query),
		Verdict:  a.Verdict,
		Summary:  clean(a.Summary),
		URL:      resultURL,
	}
	width := utf8.RuneCountInString(d.Title)
	d.Underline, d.Rule = strings.Repeat("═", width), strings.Repeat("─", width)
	if err := d.check(tier, a); err != nil {
		return Message{}, fmt.Errorf("%s letter: %w", tier, err)
	}
	subject, err := render(texts, verdictSubject, d)
	if err != nil {
		return Message{}, err
	}
	d.Subject = subject
	m, err := message(subject, verdictText, verdictHTML, d)
	if err != nil {
		return Message{}, err
	}
	// The same letter with a marker in place of the submission shows where
	// the submission stands: everything before and after it is the same.
	d.Query = ownMarker
	marked, err := message(subject, verdictText, verdictHTML, d)
	if err != nil {
		return Message{}, err
	}
	m.Own = Own{Text: own(m.Text, marked.Text), HTML: own(m.HTML, marked.HTML)}
	return m, nil
}

// ownMarker stands for the submission in a letter rendered to find it: a
// private-use character, which no template writes and neither template
// engine escapes.
const ownMarker = ""

// own is where the submission stands in rendered, given the same letter
// rendered with ownMarker in its place; nil (gate 2 then reads it all)
// unless the marker appears exactly once and the rest of the two renderings
// agrees.
func own(rendered, marked string) [][2]int {
	i := strings.Index(marked, ownMarker)
	if i < 0 || strings.Count(marked, ownMarker) != 1 {
		return nil
	}
	before, after := marked[:i], marked[i+len(ownMarker):]
	if len(before)+len(after) > len(rendered) || !strings.HasPrefix(rendered, before) || !strings.HasSuffix(rendered, after) {
		return nil
	}
	return [][2]int{{len(before), len(rendered) - len(after)}}
}

// check validates the analysis for the tier and fills in the tier's blocks.
func (d *verdictData) check(tier oracle.Tier, a oracle.Analysis) error {
	if blank(d.Query) {
		return errors.New("the query is empty")
	}
	if _, ok := verdictStyle[a.Verdict]; !ok {
		return fmt.Errorf("unknown verdict %q", oracle.Clip(string(a.Verdict), 16))
	}
	if blank(d.Summary) {
		return errors.New("the summary is empty")
	}
	if err := checkURL(d.URL); err != nil {
		return err
	}
	if tier == oracle.TierQuick {
		return nil
	}
	for _, name := range oracle.Dimensions {
		n, ok := a.Breakdown[name]
		if !ok {
			return fmt.Errorf("the breakdown has no %s", name)
		}
		// A dimension may carry any token the letter can show: judging
		// whether NULL belongs there is the generator's schema check, and a
		// customer is better served by the letter than by no letter.
		if _, ok := verdictStyle[n.Verdict]; !ok {
			return fmt.Errorf("unknown verdict %q for %s", oracle.Clip(string(n.Verdict), 16), name)
		}
		if blank(n.Analysis) {
			return fmt.Errorf("the %s analysis is empty", name)
		}
		d.Breakdown = append(d.Breakdown, dimension{Name: name, Verdict: n.Verdict, Analysis: clean(n.Analysis)})
	}
	if tier == oracle.TierFull {
		return nil
	}
	s := a.Strategy
	switch {
	case s == nil:
		return errors.New("the strategy is missing")
	case blank(s.NextStep):
		return errors.New("the strategy's next step is empty")
	case blank(s.Alternative):
		return errors.New("the strategy's alternative is empty")
	case len(s.Tests) != 3:
		return fmt.Errorf("the strategy has %d tests, want 3", len(s.Tests))
	}
	st := &oracle.Strategy{NextStep: clean(s.NextStep), Alternative: clean(s.Alternative)}
	for i, t := range s.Tests {
		if blank(t) {
			return fmt.Errorf("the strategy's test %d is empty", i+1)
		}
		st.Tests = append(st.Tests, clean(t))
	}
	d.Strategy = st
	return nil
}

// checkURL accepts only an absolute http(s) link: the letter's promise is
// that the result page is one click away.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("the result page URL is not an absolute http(s) URL")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return errors.New("the result page URL contains white space")
	}
	return nil
}

// autoresponseTemplate names the acknowledgement's files.
const autoresponseTemplate = "autoresponse"

// maxReplySubject bounds the subject an autoresponse echoes, in runes.
const maxReplySubject = 200

// Autoresponse renders the support inbox's acknowledgement of a message
// whose subject was subject: the canonical text, under the message's own
// subject with "Re: " once. The echoed subject loses its control
// characters (a header cannot be split through it) and is kept short.
func Autoresponse(b Brand, subject string) (Message, error) {
	subject = strings.Join(strings.FieldsFunc(subject, unicode.IsControl), " ")
	if utf8.RuneCountInString(subject) > maxReplySubject {
		subject = string([]rune(subject)[:maxReplySubject])
	}
	d := linkData{Brand: b.withDefaults(), Subject: inbox.ReplySubject(subject)}
	return message(d.Subject, autoresponseTemplate+".txt", autoresponseTemplate+".html", d)
}

// The chat's emails, each named for its template files (<name>.txt with
// its "<name> subject", and <name>.html).
const (
	chatSignIn        = "chat_signin"
	chatPaymentFailed = "chat_payment_failed"
)

// chatData is what the chat's emails show: the brand, the link, and how
// many minutes a sign-in link works.
type chatData struct {
	Brand   Brand
	Subject string
	URL     string
	Minutes int
}

// ChatSignIn renders the sign-in email of Sisters Chat carrying link, which
// works once and for valid (whole minutes).
func ChatSignIn(b Brand, link string, valid time.Duration) (Message, error) {
	if valid < time.Minute {
		return Message{}, fmt.Errorf("sign-in email: a link valid for %s", valid)
	}
	return chatMessage(chatSignIn, chatData{Brand: b.withDefaults(), URL: link, Minutes: int(valid / time.Minute)})
}

// ChatPaymentFailed renders the notice that a Sisters Chat subscription's
// renewal failed, linking to the chat page at chatURL, where the person
// opens the billing portal.
func ChatPaymentFailed(b Brand, chatURL string) (Message, error) {
	return chatMessage(chatPaymentFailed, chatData{Brand: b.withDefaults(), URL: chatURL})
}

func chatMessage(name string, d chatData) (Message, error) {
	if err := checkURL(d.URL); err != nil {
		return Message{}, fmt.Errorf("%s email: %w", name, err)
	}
	subject, err := render(texts, name+" subject", d)
	if err != nil {
		return Message{}, err
	}
	d.Subject = subject
	return message(subject, name+".txt", name+".html", d)
}

// noticeData is what the silent-drop notice templates see.
type noticeData struct {
	Brand   Brand
	Subject string
	// Tiers is the list the customer chooses from, "Quick Take ($1), Full
	// Breakdown ($5), or Strategy Session ($25)", built from the price table
	// so the notice cannot drift from what checkout charges.
	Tiers string
}

// SilentDropNotice renders the email of SPEC_ORACLE_SILENT_DROP "Output 1"
// to a customer who paid but whose session lacked the tier or the query.
func SilentDropNotice(b Brand) (Message, error) {
	d := noticeData{Brand: b.withDefaults(), Tiers: tierChoices()}
	subject, err := render(texts, noticeSubject, d)
	if err != nil {
		return Message{}, err
	}
	d.Subject = subject
	return message(subject, noticeText, noticeHTML, d)
}

func tierChoices() string {
	var parts []string
	for _, t := range oracle.Tiers() {
		parts = append(parts, fmt.Sprintf("%s (%s)", t.Name(), dollars(t.PriceCents())))
	}
	last := len(parts) - 1
	return strings.Join(parts[:last], ", ") + ", or " + parts[last]
}

// dollars writes a price as the notice does: "$1", or "$1.50" with cents.
func dollars(cents int64) string {
	if cents%100 == 0 {
		return fmt.Sprintf("$%d", cents/100)
	}
	return fmt.Sprintf("$%d.%02d", cents/100, cents%100)
}

func message(subject, text, html string, data any) (Message, error) {
	t, err := render(texts, text, data)
	if err != nil {
		return Message{}, err
	}
	h, err := render(pages, html, data)
	if err != nil {
		return Message{}, err
	}
	return Message{Subject: subject, Text: t, HTML: h}, nil
}

func render(t runner, name string, data any) (string, error) {
	out, err := t.Execute(name, data)
	if err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return out, nil
}

// clean gives customer and model text one kind of line break, so the plain
// text has a single convention and the HTML breaks lines where it does.
func clean(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }
