package mail

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTransportFailuresAreScrubbedOfAddresses(t *testing.T) {
	// The SDK's transport errors name the endpoint, not the message; should
	// one ever quote an address, the error still does not carry it.
	cause := fmt.Errorf("post failed for <Jane.Doe+x@example.com>: %w", errors.ErrUnsupported)
	e := classifySES(cause)
	if e.Class != Transient || !errors.Is(e, errors.ErrUnsupported) {
		t.Fatalf("got %s, %v", e.Class, e)
	}
	if strings.Contains(e.Error(), "Jane.Doe") || !strings.Contains(e.Error(), "post failed for <<address>>") {
		t.Fatalf("not scrubbed: %v", e)
	}
}
