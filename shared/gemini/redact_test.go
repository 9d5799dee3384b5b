package gemini

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// genai's configuration errors print the whole ClientConfig, key included.
func TestRedactedHidesTheKeyAndKeepsTheCause(t *testing.T) {
	cause := errors.New(`bad config: ClientConfig: &genai.ClientConfig{APIKey:"AIza-secret", Backend:1}`)
	err := fmt.Errorf("gemini: new client: %w", redacted{err: cause, secret: "AIza-secret"})
	if strings.Contains(err.Error(), "AIza-secret") || !strings.Contains(err.Error(), `APIKey:"[redacted]"`) {
		t.Errorf("message %q", err)
	}
	if !errors.Is(err, cause) {
		t.Error("the cause is not reachable with errors.Is")
	}
}
