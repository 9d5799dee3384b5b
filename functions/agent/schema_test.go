package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validateAgainst checks value against schema, both given as Go values as
// an answer holds them, in their wire form (JSON, numbers as json.Number).
// The schema is compiled as JSON Schema 2020-12 unless it names its draft,
// and checked against its draft's metaschema first.
func validateAgainst(t *testing.T, schema, value any) {
	t.Helper()
	wire := func(v any) any {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("schema.json", wire(schema)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	if err := s.Validate(wire(value)); err != nil {
		t.Fatalf("%v", err)
	}
}
