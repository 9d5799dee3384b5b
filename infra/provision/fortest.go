package provision

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/awsenv"
)

// TestRegion is the region tests and the local stack use.
const TestRegion = "us-east-1"

// Fixture is a freshly provisioned copy of the template's resources.
type Fixture struct {
	*Stack
	AWS aws.Config
}

// TemplatePath is the repository's template.yaml, found from this file.
func TemplatePath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "template.yaml")
}

// ForTest provisions template.yaml into moto under a random prefix, so each
// test has its own tables, queues, bucket and topic with the real schema.
func ForTest(tb testing.TB, secrets map[string]string) *Fixture {
	tb.Helper()
	cfg := awsenv.ForEndpoint(motoserver.ForTest(tb), TestRegion)
	tmpl, err := sam.Load(TemplatePath())
	if err != nil {
		tb.Fatalf("load template: %v", err)
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("random prefix: %v", err)
	}
	st, err := Provision(context.Background(), Options{
		Template: tmpl,
		AWS:      cfg,
		Prefix:   "t" + hex.EncodeToString(b) + "-",
		Params:   map[string]string{"BaseUrl": "http://localhost:3000", "AllowedOrigins": "http://localhost:3000"},
		Secrets:  secrets,
	})
	if err != nil {
		tb.Fatalf("provision: %v", err)
	}
	return &Fixture{Stack: st, AWS: cfg}
}
