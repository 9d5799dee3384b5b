package httpapi

import (
	"net/http"
	"slices"
)

// CORS allows browser calls from a fixed list of origins.
type CORS struct {
	Origins []string
	Methods string // e.g. "POST, OPTIONS"
}

// Allowed reports whether a request may proceed: requests without an Origin
// (servers, curl) may; browser requests only from a configured origin.
func (c CORS) Allowed(r Request) bool {
	o := Header(r, "Origin")
	return o == "" || slices.Contains(c.Origins, o)
}

// Apply adds the CORS headers for an allowed origin to resp.
func (c CORS) Apply(r Request, resp Response) Response {
	o := Header(r, "Origin")
	if o == "" || !slices.Contains(c.Origins, o) {
		return resp
	}
	if resp.Headers == nil {
		resp.Headers = map[string]string{}
	}
	resp.Headers["Access-Control-Allow-Origin"] = o
	resp.Headers["Vary"] = "Origin"
	return resp
}

// Preflight answers an OPTIONS request.
func (c CORS) Preflight(r Request) Response {
	resp := Response{StatusCode: http.StatusNoContent, Headers: map[string]string{}}
	if !c.Allowed(r) || Header(r, "Origin") == "" {
		return resp
	}
	resp.Headers["Access-Control-Allow-Methods"] = c.Methods
	resp.Headers["Access-Control-Allow-Headers"] = "Content-Type"
	resp.Headers["Access-Control-Max-Age"] = "600"
	return c.Apply(r, resp)
}
