package main

import "testing"

func TestValidOrigins(t *testing.T) {
	cases := []struct {
		origins []string
		ok      bool
	}{
		{[]string{"https://42sisters.ai"}, true},
		{[]string{"https://42sisters.ai", "http://localhost:3000"}, true},
		{nil, false},
		{[]string{"https://42sisters.ai/"}, false},
		{[]string{"https://42sisters.ai/oracle"}, false},
		{[]string{"42sisters.ai"}, false},
		{[]string{"ftp://42sisters.ai"}, false},
	}
	for _, c := range cases {
		if err := validOrigins(c.origins); (err == nil) != c.ok {
			t.Errorf("%q: %v, want ok=%v", c.origins, err, c.ok)
		}
	}
}
