package smoke

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

// Settings name one deployment as a run reaches it. The smoke function
// reads them from its environment; `make smoke` from the stack's outputs
// and parameters, through the same LoadSettings.
type Settings struct {
	APIURL string
	// Origin is the site's (BASE_URL's scheme and host, as the chat has
	// it): the chat stage sends its requests from it, as the page does.
	Origin        string
	OrdersTable   string
	ChatTable     string
	LedgerTable   string
	AuditBucket   string
	AlertsTopic   string
	StripeAPIBase string
	// StripeKey and SigningSecret are test mode's (stripex.SmokeSecrets).
	// Without test mode configured, StripeKey is the main key when it is
	// live, so the run's first stage says so, loudly, instead of the run
	// failing to start unheard.
	StripeKey     string
	SigningSecret string
	Graph         *mail.GraphConfig
	// Hasher names the smoke chat account as the chat names it
	// (HASH_PEPPER).
	Hasher *audit.Hasher
	// Agent is the agent rail as the agent function has it (X402_PAY_TO,
	// X402_NETWORKS) and the smoke wallet that pays it (X402_SMOKE_KEY,
	// X402_SMOKE_PAYER); the environment check says what is missing.
	Agent Agent
}

// LoadSettings reads and validates every setting once.
func LoadSettings(ctx context.Context, env *config.Env) (Settings, error) {
	s := Settings{
		APIURL:        env.URL("API_URL"),
		OrdersTable:   env.String("ORDERS_TABLE"),
		ChatTable:     env.String("CHAT_TABLE"),
		LedgerTable:   env.String("LEDGER_TABLE"),
		AuditBucket:   env.String("AUDIT_BUCKET"),
		AlertsTopic:   env.String("ALERTS_TOPIC_ARN"),
		StripeAPIBase: env.Optional("STRIPE_API_BASE", ""),
	}
	main := env.Secret(ctx, "STRIPE_SECRET_KEY", true)
	test := env.Secret(ctx, "STRIPE_TEST_SECRET_KEY", false)
	testWebhook := env.Secret(ctx, "STRIPE_TEST_WEBHOOK_SECRET", false)
	base := env.URL("BASE_URL")
	_, s.Graph = mail.TransportFrom(ctx, env, "oracle@42sisters.ai")
	s.Hasher = audit.HasherFrom(ctx, env)
	s.Agent = loadAgent(ctx, env)
	if err := env.Err(); err != nil {
		return Settings{}, err
	}
	if u, err := url.Parse(base); err == nil {
		s.Origin = u.Scheme + "://" + u.Host // env.URL has checked it is absolute
	}
	var ok bool
	if s.StripeKey, s.SigningSecret, ok = stripex.SmokeSecrets(main, test, testWebhook); !ok && stripex.IsLiveKey(main) && test == "" {
		s.StripeKey = main
	}
	return s, nil
}

// loadAgent reads the agent rail's settings; a malformed smoke key is a
// configuration error, named without its value.
func loadAgent(ctx context.Context, env *config.Env) Agent {
	a := Agent{PayTo: env.Optional("X402_PAY_TO", ""), Payer: env.Optional("X402_SMOKE_PAYER", "")}
	switch networks := env.Optional("X402_NETWORKS", "testnet"); networks {
	case "testnet", "both":
		a.Testnet = true
	case "mainnet":
	default:
		env.Invalid("X402_NETWORKS", fmt.Errorf("must be mainnet, testnet or both, got %q", networks))
	}
	if key := env.Secret(ctx, "X402_SMOKE_KEY", false); key != "" {
		k, err := ParseWalletKey(key)
		if err != nil {
			env.Invalid("X402_SMOKE_KEY", err)
		}
		a.Key = k
	}
	return a
}

// NewRunner wires a Runner for the deployment s over the AWS
// configuration cfg; ses reads the SES account (a client of cfg, or of a
// local SES front).
func NewRunner(s Settings, cfg aws.Config, ses SESAccount) (*Runner, error) {
	db := awsenv.NewTables(cfg)
	orders := store.NewOrders(db, s.OrdersTable, time.Now)
	ledger := store.NewLedger(db, s.LedgerTable, time.Now)
	s3 := awsenv.S3(cfg)
	email := SESProbe(ses)
	if s.Graph != nil {
		g, err := mail.NewGraph(*s.Graph)
		if err != nil {
			return nil, fmt.Errorf("the Graph transport: %w", err)
		}
		email = GraphProbe(g)
	}
	reader := audit.NewReader(s3, s.AuditBucket)
	return &Runner{
		StripeKey: s.StripeKey, SigningSecret: s.SigningSecret, APIURL: s.APIURL, Origin: s.Origin,
		HTTP:     &http.Client{Timeout: 10 * time.Second},
		Sessions: stripex.New(s.StripeKey, stripex.Options{BaseURL: s.StripeAPIBase, Retries: 1}),
		Stores:   StoresProbe(orders, ledger, s3, s.AuditBucket),
		Email:    email,
		Orders:   orders,
		Audit:    reader,
		Agent:    s.Agent,
		Chat:     chat.NewStore(db, s.ChatTable, s.Hasher, time.Now),
		ChatMail: reader,
	}, nil
}

// Announcement is the alert every run raises: INFO SMOKE_PASSED, or
// CRITICAL SMOKE_FAILED whose headline names the first failing stage.
func Announcement(rep Report) alert.Alert {
	// Each run is its own subject: a run that failed before it made a
	// session is not taken for a repeat of the one before it.
	a := alert.Alert{Severity: alert.Info, Kind: alert.SmokePassed, Session: rep.Session,
		Subject: "run " + rep.Started.UTC().Format(time.RFC3339Nano), Detail: rep.Headline()}
	if !rep.OK() {
		a.Severity, a.Kind = alert.Critical, alert.SmokeFailed
	}
	return a
}
