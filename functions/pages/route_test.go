package main

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/local/gateway"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/httpapi"
)

// handlerInvoker runs the pages handler as the local Runtime API runs its
// bootstrap: the gateway's event in, the response out, as JSON.
type handlerInvoker struct{ h *Handler }

func (i handlerInvoker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var req httpapi.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, err
	}
	resp, err := i.h.Handle(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// TestTheResultPageIsServedWhereTheSpecPutsIt: the template routes GET
// /result/{session_id} to this function, as API Gateway and the local
// stack's gateway (which reads the template) route it, and the page
// answers there as at /oracle/result?session_id=…; a path the template
// does not route is the gateway's 404.
func TestTheResultPageIsServedWhereTheSpecPutsIt(t *testing.T) {
	tpl, err := sam.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var routes []gateway.Route
	for _, fn := range tpl.Functions() {
		if fn.LogicalID != "PagesFunction" {
			continue
		}
		for _, r := range fn.Routes {
			routes = append(routes, gateway.Route{Method: r.Method, Path: r.Path, Function: handlerInvoker{newHandler()}})
		}
	}
	g, err := gateway.New(gateway.Options{Routes: routes, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/result/cs_test_a1B2c3", http.StatusOK, `data-state="pending"`},
		{"/oracle/result?session_id=cs_test_a1B2c3", http.StatusOK, `data-state="pending"`},
		{"/result/cs_nope", http.StatusBadRequest, `data-state="unknown"`},
		// No session: the gateway finds no route, as API Gateway does.
		{"/result", http.StatusNotFound, `{"message":"Not Found"}`},
		{"/result/", http.StatusNotFound, `{"message":"Not Found"}`},
		{"/result/cs_test_a1B2c3/more", http.StatusNotFound, `{"message":"Not Found"}`},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("GET %s: %d, want %d with %s", c.path, resp.StatusCode, c.status, c.want)
		}
	}
}
