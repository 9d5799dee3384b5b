package stripex

import (
	"os"
	"strings"
	"testing"
)

// TestEventVersion: only the version stripe-go v76 pins is read; an older
// one, a newer one, none at all and a malformed one are each refused, and
// named so that an alert can say which.
func TestEventVersion(t *testing.T) {
	cases := []struct {
		name, v, want string
		ok            bool
	}{
		{"the pinned one", APIVersion, APIVersion, true},
		{"older", "2022-11-15", "2022-11-15", false},
		{"newer", "2024-09-30.acacia", "2024-09-30.acacia", false},
		{"missing", "", "none", false},
		{"same date, another release", APIVersion + ".acacia", APIVersion + ".acacia", false},
		{"not a version", "2023-10-16\n[ORACLE-ALERT] forged", "unrecognised", false},
		{"too long", strings.Repeat("9", 41), "unrecognised", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name, ok := EventVersion(c.v)
			if name != c.want || ok != c.ok {
				t.Fatalf("EventVersion(%q) = %q, %v; want %q, %v", c.v, name, ok, c.want, c.ok)
			}
		})
	}
}

// TestDeployingNamesTheVersion: the deploying guide gives the webhook
// endpoints the version the code reads, so moving stripe-go to another
// major version fails here until the guide (and the endpoints) move too.
func TestDeployingNamesTheVersion(t *testing.T) {
	b, err := os.ReadFile("../../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "api_version=" + APIVersion; !strings.Contains(string(b), want) {
		t.Fatalf("docs/deploying.md does not create the webhook endpoints with %s", want)
	}
}
