package testkit

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that keeps what the checker reports instead of
// failing the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// spec is a small API: POST /things {name} answers 201 {id}, 400 {error};
// GET /things/{id} answers 200 {id, name}, with a cookie; /_local/ is
// no part of it.
func spec(server string) []byte {
	return []byte(`{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "servers": [{"url": "` + server + `"}],
	"components": {
		"securitySchemes": {"session": {"type": "apiKey", "in": "cookie", "name": "sid"}},
		"schemas": {"Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}}
	},
	"paths": {
		"/things": {"post": {"security": [],
			"requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"],
				"properties": {"name": {"type": "string", "maxLength": 5}}}}}},
			"responses": {
				"201": {"description": "made", "headers": {"Location": {"required": true, "schema": {"type": "string"}}},
					"content": {"application/json": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}}}}},
				"400": {"description": "bad", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
			}}},
		"/things/{id}": {"get": {"security": [{"session": []}],
			"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[0-9]+$"}}],
			"responses": {
				"200": {"description": "the thing", "content": {"application/json": {"schema": {"type": "object", "required": ["id", "name"],
					"properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}}}},
				"401": {"description": "no session", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
			}}}
	}}`)
}

// api answers as the code under test would; answer overrides one route.
func api(answer map[string]func(w http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		if f, ok := answer[key]; ok {
			f(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case key == "POST /things":
			b, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(b), `"name"`) {
				w.WriteHeader(400)
				_, _ = io.WriteString(w, `{"error":"name is required"}`)
				return
			}
			w.Header().Set("Location", "/things/1")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"id":1}`)
		case strings.HasPrefix(key, "GET /things/"):
			if _, err := r.Cookie("sid"); err != nil {
				w.WriteHeader(401)
				_, _ = io.WriteString(w, `{"error":"sign in"}`)
				return
			}
			_, _ = io.WriteString(w, `{"id":1,"name":"one"}`)
		default:
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"error":"not found"}`)
		}
	})
}

type exchange struct {
	method, path, body string
	cookie             bool
}

func (e exchange) do(t *testing.T, c *http.Client, base string) int {
	t.Helper()
	req, err := http.NewRequest(e.method, base+e.path, strings.NewReader(e.body))
	if err != nil {
		t.Fatal(err)
	}
	if e.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.cookie {
		req.AddCookie(&http.Cookie{Name: "sid", Value: "x"})
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

// The checker passes what the document says, counts it, and fails the
// test on each way code and document can disagree.
func TestOpenAPIChecker(t *testing.T) {
	made := exchange{"POST", "/things", `{"name":"one"}`, false}
	cases := []struct {
		name     string
		answer   map[string]func(w http.ResponseWriter)
		exchange exchange
		fails    string // what the report says; "" for none
	}{
		{"a documented exchange", nil, made, ""},
		{"a documented refusal of an invalid request", nil, exchange{"POST", "/things", `{"nom":"one"}`, false}, ""},
		{"a read with the cookie", nil, exchange{"GET", "/things/1", "", true}, ""},
		{"a refused read without it", nil, exchange{"GET", "/things/1", "", false}, ""},
		{"the local stack's own page", nil, exchange{"GET", "/_local/mail", "", false}, ""},
		{"a field of another type", map[string]func(w http.ResponseWriter){"POST /things": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", "/things/1")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"id":"1"}`)
		}}, made, "does not match the document"},
		{"a required header missing", map[string]func(w http.ResponseWriter){"POST /things": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"id":1}`)
		}}, made, "Location"},
		{"an undocumented status", map[string]func(w http.ResponseWriter){"POST /things": func(w http.ResponseWriter) {
			w.WriteHeader(409)
		}}, made, "status is not supported"},
		{"another content type", map[string]func(w http.ResponseWriter){"POST /things": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Location", "/things/1")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `1`)
		}}, made, "text/plain"},
		{"an undocumented route", nil, exchange{"GET", "/other", "", false}, "not documented"},
		{"an undocumented method", nil, exchange{"DELETE", "/things", "", false}, "not documented"},
		{"an invalid request served", nil, exchange{"POST", "/things", `{"name":"a name too long"}`, false}, "yet it was served"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(api(c.answer))
			defer srv.Close()
			rec := &recorder{TB: t}
			checker := NewOpenAPIChecker(rec, spec(srv.URL))
			checker.Unchecked = []string{"/_local/"}
			c.exchange.do(t, checker.Client(), srv.URL)
			report := strings.Join(rec.errors, "\n")
			switch {
			case c.fails == "" && report != "":
				t.Fatalf("reported %s", report)
			case c.fails != "" && !strings.Contains(report, c.fails):
				t.Fatalf("reported %q, want %q", report, c.fails)
			}
			checked := 0
			for _, n := range checker.Checked() {
				checked += n
			}
			if want := c.fails == "" && c.exchange.path != "/_local/mail"; (checked == 1) != want {
				t.Fatalf("checked %v", checker.Checked())
			}
		})
	}
	// Another origin is carried unchecked.
	other := httptest.NewServer(api(nil))
	defer other.Close()
	rec := &recorder{TB: t}
	checker := NewOpenAPIChecker(rec, spec("http://localhost:1"))
	if status := (exchange{"GET", "/other", "", false}).do(t, checker.Client(), other.URL); status != 404 || len(rec.errors) != 0 || len(checker.Checked()) != 0 {
		t.Fatalf("another origin: %d %v %v", status, rec.errors, checker.Checked())
	}
}
