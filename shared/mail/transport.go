package mail

import (
	"context"
	"fmt"

	"42sisters.ai/oracle/shared/config"
)

// TransportFrom reads MAIL_TRANSPORT (ses, the default, or graph) and, for
// graph, the Graph settings and the app's credentials from env, recording
// any problem as env's. graph is nil with SES. defaultSender is the mailbox
// the app sends as when GRAPH_SENDER is not set.
func TransportFrom(ctx context.Context, env *config.Env, defaultSender string) (transport string, graph *GraphConfig) {
	transport = env.Optional("MAIL_TRANSPORT", "ses")
	switch transport {
	case "ses":
	case "graph":
		graph = &GraphConfig{
			Sender:    env.Address("GRAPH_SENDER", defaultSender),
			APIBase:   env.Optional("GRAPH_API_BASE", DefaultGraphAPIBase),
			LoginBase: env.Optional("GRAPH_LOGIN_BASE", DefaultGraphLoginBase),
		}
		// Read again when the identity platform refuses them (see GraphConfig).
		graph.Credentials = env.Credential(ctx, "GRAPH_CREDENTIALS", true)
		if secret := graph.Credentials.Get(); secret != "" {
			var err error
			if graph.TenantID, graph.ClientID, graph.ClientSecret, err = ParseGraphCredentials(secret); err != nil {
				env.Invalid("GRAPH_CREDENTIALS", err)
			}
		}
	default:
		env.Invalid("MAIL_TRANSPORT", fmt.Errorf("must be ses or graph, got %q", transport))
	}
	return transport, graph
}
