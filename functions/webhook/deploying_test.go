package main

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"testing"

	"42sisters.ai/oracle/shared/audit"
)

// takenEvents is every event type the webhook acts on.
func takenEvents() []string {
	taken := []string{string(audit.EventCheckoutCompleted), string(audit.EventAsyncSucceeded), string(audit.EventAsyncFailed)}
	for t := range moneyEvents {
		taken = append(taken, string(t))
	}
	for t := range chatEvents {
		taken = append(taken, string(t))
	}
	slices.Sort(taken)
	return taken
}

// TestDeployingListsEveryEventTaken: the deploying guide creates the
// webhook endpoints with exactly the event types the webhook acts on, so
// a type added here without the endpoints sending it fails, as does one
// the endpoints send for nothing.
func TestDeployingListsEveryEventTaken(t *testing.T) {
	b, err := os.ReadFile("../../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`enabled_events\[\]=([a-z_.]+)`).FindAllStringSubmatch(string(b), -1) {
		listed[m[1]] = true
	}
	if got, want := slices.Sorted(maps.Keys(listed)), takenEvents(); !slices.Equal(got, want) {
		t.Fatalf("docs/deploying.md enables %v, the webhook takes %v", got, want)
	}
}
