package mail_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakegraph"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/mail"
)

// graphSecret is the app's credentials as the operator stores them.
func graphSecret(t *testing.T, clientSecret string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"tenant_id": fakegraph.DefaultTenant, "client_id": fakegraph.DefaultClientID, "client_secret": clientSecret})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The identity platform refuses the app's client secret (it expired and
// the operator made a new one): the credentials are read again from their
// secret in moto's Secrets Manager, at most once a minute, and the token is
// asked for once more with the new ones. It serves the mailer's sends, the
// inbox's poll and the health job's token check alike; credentials that did
// not change are refused as before (Blocked).
func TestGraphReadsRefusedCredentialsAgain(t *testing.T) {
	ops := []struct {
		name string
		call func(g *mail.Graph) error
	}{
		{"Send", func(g *mail.Graph) error { _, err := g.Send(context.Background(), graphMessage()); return err }},
		{"Unread", func(g *mail.Graph) error {
			_, err := g.Unread(context.Background(), graphSender, graphNow.Add(-time.Hour))
			return err
		}},
		{"CheckToken", func(g *mail.Graph) error { return g.CheckToken(context.Background()) }},
	}
	for _, op := range ops {
		for _, rotated := range []bool{true, false} {
			name := op.name + "/rotated"
			if !rotated {
				name = op.name + "/not rotated"
			}
			t.Run(name, func(t *testing.T) {
				clock := testkit.NewClock(time.Now())
				creds := testkit.RotatingSecret(t, "GRAPH_CREDENTIALS", graphSecret(t, "expired-client-secret"), clock)
				// The identity platform knows only the new client secret.
				fx := newGraphFixture(t, fakegraph.Options{ClientSecret: "new-client-secret"}, func(c *mail.GraphConfig) {
					c.ClientSecret, c.Credentials = "expired-client-secret", creds.Value
				})
				if rotated {
					creds.Rotate(graphSecret(t, "new-client-secret"))
				}
				clock.Add(time.Minute)
				err := op.call(fx.graph)
				tokens := fx.fake.CountCalls(fakegraph.KindToken)
				if !rotated {
					var me *mail.Error
					if !errors.As(err, &me) || me.Class != mail.Blocked || tokens != 1 {
						t.Fatalf("err = %v after %d token requests, want Blocked after one", err, tokens)
					}
					return
				}
				if err != nil || tokens != 2 {
					t.Fatalf("after the rotation: %v after %d token requests, want success after two", err, tokens)
				}
			})
		}
	}
}
