package fakecontrol_test

import (
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"
)

type control struct {
	Status int  `json:"status"`
	Reset  bool `json:"reset"`
}

func TestDecodeIsStrict(t *testing.T) {
	cases := []struct {
		body string
		ok   bool
	}{
		{`{"status":503}`, true},
		{`{}`, true},
		{`{"statu":503}`, false},
		{`{"status":503} {"reset":true}`, false},
		{`{"status":"503"}`, false},
		{``, false},
	}
	for _, tc := range cases {
		c, err := fakecontrol.Decode[control](strings.NewReader(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%q: %+v %v, want ok=%v", tc.body, c, err, tc.ok)
		}
	}
}
