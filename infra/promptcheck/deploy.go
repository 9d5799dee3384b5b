package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/smithy-go"

	"42sisters.ai/oracle/infra/deployment"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/samconfig"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/gemini"
)

// ManagedStack is the stack of SAM's own artifact bucket, which
// `sam deploy` makes and uses when samconfig.toml says resolve_s3; its
// SourceBucket output names the bucket.
const ManagedStack = "aws-sam-cli-managed-default"

// target is where a deploy's contamination checks are kept and what they
// ask.
type target struct {
	Bucket string // the deployment's artifact bucket
	Stack  string // the stack deployed
	KeyARN string // the secret of the deployment's Gemini key
	// Models are the models the deployment writes verdicts with: the
	// primary (which the Sisters Chat calls too), then the fallback, if any.
	Models []string
}

// The template's parameters the gate reads.
const (
	paramKey      = "GeminiApiKeyArn"
	paramModel    = "GeminiModel"
	paramFallback = "GeminiFallbackModel"
)

// resolveTarget reads the deployment's bucket, stack, key and models as
// `sam deploy` will deploy them: the bucket given, or samconfig.toml's, or
// SAM's managed one; each parameter from samconfig.toml's overrides, else
// as the deployed stack has it (SAM keeps a deployed stack's value of a
// parameter it is not given), else the template's default (the first
// deploy). tmpl is the template to be deployed.
func resolveTarget(ctx context.Context, cfn deployment.Stacks, sc samconfig.Config, tmpl *sam.Template, region, bucket, managed string) (target, error) {
	if sc.StackName == "" {
		return target{}, errors.New("samconfig.toml names no stack: run the first deploy guided (docs/deploying.md)")
	}
	t := target{Bucket: or(bucket, sc.S3Bucket), Stack: sc.StackName}
	if t.Bucket == "" {
		d, err := deployment.Describe(ctx, cfn, region, managed)
		if err != nil {
			return target{}, fmt.Errorf("SAM's artifact bucket (%w): the first deploy is guided, see docs/deploying.md", err)
		}
		if t.Bucket, err = d.Output("SourceBucket"); err != nil {
			return target{}, err
		}
	}
	params := map[string]string{}
	var missing []string
	for _, name := range []string{paramKey, paramModel, paramFallback} {
		if v, ok := sc.Parameters[name]; ok {
			params[name] = v
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		d, err := deployment.Describe(ctx, cfn, region, sc.StackName)
		switch {
		case err == nil:
			for _, name := range missing {
				if v, ok := d.Parameters[name]; ok {
					params[name] = v
				}
			}
		case !stackMissing(err):
			// Only a stack that is not there yet takes the template's
			// defaults: a refused or failed read must not check a model
			// the deploy will not use.
			return target{}, err
		}
		for _, name := range missing {
			if _, ok := params[name]; ok {
				continue
			}
			if v, ok := tmpl.Param(name, &sam.Values{}); ok {
				params[name] = v
			}
		}
	}
	if t.KeyARN = params[paramKey]; t.KeyARN == "" {
		return target{}, fmt.Errorf("no %s: not among samconfig.toml's parameter_overrides, and the stack %s has none", paramKey, sc.StackName)
	}
	if params[paramModel] == "" {
		return target{}, fmt.Errorf("no %s: not among samconfig.toml's parameter_overrides, nor the stack's, nor the template's", paramModel)
	}
	t.Models = []string{params[paramModel]}
	if fb := params[paramFallback]; fb != "" && fb != params[paramModel] {
		t.Models = append(t.Models, fb)
	}
	return t, nil
}

// stackMissing reports whether err is CloudFormation's answer for a stack
// that does not exist (a ValidationError saying so).
func stackMissing(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationError" && strings.Contains(api.ErrorMessage(), "does not exist")
}

func or(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// deployOptions are the gate's settings besides the deployment's.
type deployOptions struct {
	Bucket       string // -bucket: the bucket to keep checks in, over samconfig.toml's
	ManagedStack string // ManagedStack, or a test's
	GeminiBase   string // empty: Google; a test's fake Gemini
	Verdicts     int
	Chat         int
	MaxRate      float64
	Now          func() time.Time
}

// deployCheck is make deploy's gate: it finds the deployment, reads its
// Gemini key from its secret, and admits or refuses the current prompt on
// each of its models (gate.run).
func deployCheck(ctx context.Context, cfg aws.Config, sc samconfig.Config, tmpl *sam.Template, o deployOptions, out io.Writer) error {
	t, err := resolveTarget(ctx, cloudformation.NewFromConfig(cfg), sc, tmpl, cfg.Region, o.Bucket, o.ManagedStack)
	if err != nil {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	key, err := config.NewAWSSecrets(cfg).Secret(ctx, t.KeyARN)
	if err != nil {
		return fmt.Errorf("%w: read the deployment's Gemini key: %w", errRefused, err)
	}
	g := gate{S3: awsenv.S3(cfg), Bucket: t.Bucket, Stack: t.Stack, Verdicts: o.Verdicts, Chat: o.Chat, MaxRate: o.MaxRate, Now: o.Now, Out: out}
	for i, name := range t.Models {
		client, err := gemini.New(ctx, gemini.Options{APIKey: key, Model: name, BaseURL: o.GeminiBase})
		if err != nil {
			return fmt.Errorf("%w: %w", errRefused, err)
		}
		g.Models = append(g.Models, model{Name: name, Model: client, Chat: i == 0})
	}
	return g.run(ctx)
}
