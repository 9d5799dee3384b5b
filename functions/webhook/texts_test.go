package main

import (
	"testing"

	"42sisters.ai/oracle/infra/testkit"
)

// Every text this function can answer with passes the content filter
// (issue 5's static check): each string literal of the handler's package,
// which holds all of its customer-facing error and state messages.
func TestEveryAnswerTextPassesTheContentFilter(t *testing.T) {
	testkit.LiteralsPassTheFilter(t, ".")
}
