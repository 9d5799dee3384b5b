package main

import (
	"net/http"

	"42sisters.ai/oracle/shared/httpapi"
)

// renderAll renders every page in every form a customer can receive it, for
// tests that must see all customer-facing text (such as the content
// filter's). The result page's states are all in its one rendering, hidden
// until its script shows them.
func renderAll() ([]page, error) {
	h := &Handler{Site: defaultSite, Support: defaultSupport, Polling: DefaultPolling}
	cases := []struct {
		name string
		req  httpapi.Request
	}{
		{"order form", request(http.MethodGet, "/", nil)},
		{"order form after a cancelled payment", request(http.MethodGet, "/", map[string]string{"cancelled": "1"})},
		{"result page", request(http.MethodGet, "/oracle/result", map[string]string{"session_id": "cs_test_a1B2c3D4e5F6g7H8"})},
		{"result page, malformed link", request(http.MethodGet, "/oracle/result", map[string]string{"session_id": "not-a-session"})},
		{"unknown path", request(http.MethodGet, "/nowhere", nil)},
		{"wrong method", request(http.MethodPost, "/", nil)},
	}
	var out []page
	for _, c := range cases {
		p, err := h.page(c.req)
		if err != nil {
			return nil, err
		}
		p.Name += " (" + c.name + ")"
		out = append(out, p)
	}
	return out, nil
}

// request is an API Gateway request for method, path and query parameters.
func request(method, path string, query map[string]string) httpapi.Request {
	var r httpapi.Request
	r.RawPath = path
	r.QueryStringParameters = query
	r.RequestContext.HTTP.Method = method
	r.RequestContext.HTTP.Path = path
	return r
}
