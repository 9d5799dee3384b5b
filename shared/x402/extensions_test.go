package x402

import (
	"errors"
	"strings"
	"testing"
)

// TestPaymentIdentifier: the id a payment carries in
// extensions["payment-identifier"].info.id is read when it is 16 to 128 of
// [A-Za-z0-9_-]; none is ""; anything else there is an
// ErrPaymentIdentifier, never an id.
func TestPaymentIdentifier(t *testing.T) {
	for name, c := range map[string]struct {
		ext  map[string]any
		want string
		bad  bool
	}{
		"no extensions":              {nil, "", false},
		"another extension":          {map[string]any{"bazaar": map[string]any{}}, "", false},
		"the declaration echoed":     {map[string]any{ExtensionPaymentIdentifier: map[string]any{"info": map[string]any{"required": false}}}, "", false},
		"an id":                      {withID("pay_7d5d747be160e280504c"), "pay_7d5d747be160e280504c", false},
		"sixteen":                    {withID(strings.Repeat("a", 16)), strings.Repeat("a", 16), false},
		"a hundred and twenty-eight": {withID(strings.Repeat("Z", 128)), strings.Repeat("Z", 128), false},
		"fifteen":                    {withID(strings.Repeat("a", 15)), "", true},
		"a hundred and twenty-nine":  {withID(strings.Repeat("a", 129)), "", true},
		"a dot":                      {withID("pay.7d5d747be160e280504c"), "", true},
		"non-ASCII":                  {withID("pay_7d5d747be160é280504c"), "", true},
		"a number":                   {withID(12345678901234567), "", true},
		"info a string":              {map[string]any{ExtensionPaymentIdentifier: map[string]any{"info": "pay_7d5d747be160e280504c"}}, "", true},
		"the extension a list":       {map[string]any{ExtensionPaymentIdentifier: []any{}}, "", true},
	} {
		t.Run(name, func(t *testing.T) {
			id, err := PaymentIdentifier(PaymentPayload{Extensions: c.ext})
			if id != c.want || (err != nil) != c.bad || (err != nil && !errors.Is(err, ErrPaymentIdentifier)) {
				t.Fatalf("id %q, %v; want %q, refused %v", id, err, c.want, c.bad)
			}
		})
	}
	// What a client adds is what is read.
	p := WithPaymentIdentifier(PaymentPayload{Extensions: map[string]any{"bazaar": 1}}, "pay_7d5d747be160e280504c")
	if id, err := PaymentIdentifier(p); id != "pay_7d5d747be160e280504c" || err != nil || p.Extensions["bazaar"] != 1 {
		t.Fatalf("%q %v %v", id, err, p.Extensions)
	}
}

func withID(id any) map[string]any {
	return map[string]any{ExtensionPaymentIdentifier: map[string]any{"info": map[string]any{"required": false, "id": id}}}
}
