package main

import (
	"42sisters.ai/oracle/shared/webpage"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"

	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/httpapi"
)

//go:embed templates
var files embed.FS

// The templates and assets are part of the binary: one that does not
// parse is a build defect every test catches. The pages are run by
// tmplrun, not html/template, whose reflection would keep every method of
// the AWS clients in the bootstrap; TestPagesAreWhatHTMLTemplateWrites
// holds the two to the same output.
var (
	pages  = webpage.MustPages(files, "templates/*.html", nil)
	style  = webpage.MustStyle(files, "templates/style.css")
	chatJS = webpage.MustAsset(files, "templates/chat.js")
)

// page is one rendered page.
type page struct {
	Name   string
	Status int
	CSP    string
	Body   string
}

// frame is what the shared layout needs of every page.
type frame struct {
	Title   string
	Site    string
	Support string
	Style   template.CSS
	Script  template.JS
}

type chatView struct {
	frame
	Trial      int
	MaxMessage int
	DailyCap   int
	// NearCap is from how many exchanges left the page says how many.
	NearCap       int
	Subscribed    bool // back from Stripe Checkout: a note, nothing granted
	RetentionDays int
	Price         string
}

// signInView is the sign-in link's page: the token its button posts.
type signInView struct {
	frame
	Token       string
	SessionDays int
}

type problemView struct {
	frame
	Heading string
	Message string
	// AskAgain offers the sign-in form's page.
	AskAgain bool
}

// NearCap: the page says how many exchanges are left when this many or
// fewer remain.
const NearCap = 10

// Price is the subscription's price as the page states it (the amount is
// billing's, fixed in code beside the verdict tiers).
const Price = "C$5.00 a month"

func (h *Handler) newFrame(title string, script *webpage.Asset) frame {
	f := frame{Title: title, Site: h.Site, Support: h.Support, Style: template.CSS(style.Text)}
	if script != nil {
		f.Script = template.JS(script.Text)
	}
	return f
}

// chatPage is GET /chat: one page whose script shows the sign-in form or
// the conversation, as GET /api/chat says.
func (h *Handler) chatPage(req httpapi.Request) page {
	v := chatView{
		frame: h.newFrame("Sisters Chat", &chatJS), Trial: chat.TrialExchanges, MaxMessage: MaxMessageChars,
		DailyCap: h.DailyCap, NearCap: NearCap, RetentionDays: h.RetentionDays, Subscribed: req.QueryStringParameters["subscribed"] == "1", Price: Price,
	}
	return h.render("chat.html", http.StatusOK, &chatJS, v)
}

func (h *Handler) problem(status int, heading, message string) page {
	return h.render("problem.html", status, nil, problemView{frame: h.newFrame(heading, nil), Heading: heading, Message: message})
}

func (h *Handler) signInProblem(status int, heading, message string) page {
	return h.render("problem.html", status, nil, problemView{frame: h.newFrame(heading, nil), Heading: heading, Message: message, AskAgain: true})
}

// internalError is the answer when a template fails, which only a defect
// can cause: it needs no template itself.
const internalError = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Error</title></head>` +
	`<body><h1>Something went wrong</h1><p>Please try again in a moment.</p></body></html>`

func (h *Handler) render(name string, status int, script *webpage.Asset, data any) page {
	body, err := pages.Execute(name, data)
	if err != nil {
		h.Log.Error("page not rendered", "page", name, "error", fmt.Sprint(err))
		return page{Name: name, Status: http.StatusInternalServerError, CSP: webpage.CSP(style, nil), Body: internalError}
	}
	return page{Name: name, Status: status, CSP: webpage.CSP(style, script), Body: body}
}

// html answers a page with the security headers every page carries.
func (h *Handler) html(p page) httpapi.Response { return webpage.Response(p.Status, p.CSP, p.Body) }

func itoa(n int) string { return strconv.Itoa(n) }
