// Package fakecontrol reads the control requests the fakes take on their
// /_control endpoints: one JSON object, strictly.
package fakecontrol

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode reads one JSON object into a T, refusing unknown fields and
// anything after the object, so a misspelt option fails loudly instead of
// leaving the fake behaving normally.
func Decode[T any](body io.Reader) (T, error) {
	var v, zero T
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return zero, fmt.Errorf("decode control JSON: %w", err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return zero, errors.New("decode control JSON: unexpected data after the object")
	}
	return v, nil
}
