package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"42sisters.ai/oracle/infra/deployment"
	"42sisters.ai/oracle/infra/samconfig"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/gemini"
)

// ManagedStack is the stack of SAM's own artifact bucket, which
// `sam deploy` makes and uses when samconfig.toml says resolve_s3; its
// SourceBucket output names the bucket.
const ManagedStack = "aws-sam-cli-managed-default"

// target is where a deploy's contamination check is kept and what it asks.
type target struct {
	Bucket string // the deployment's artifact bucket
	KeyARN string // the secret of the deployment's Gemini key
	Model  string // the deployment's model
}

// resolveTarget reads the deployment's bucket, key and model as `sam
// deploy` will: the bucket given, or samconfig.toml's, or SAM's managed
// one; the key's and the model's parameters from samconfig.toml's
// overrides, or as the deployed stack has them.
func resolveTarget(ctx context.Context, cfn deployment.Stacks, sc samconfig.Config, region, bucket, managed string) (target, error) {
	t := target{Bucket: bucket, KeyARN: sc.Parameters["GeminiApiKeyArn"], Model: sc.Parameters["GeminiModel"]}
	if t.Bucket == "" {
		t.Bucket = sc.S3Bucket
	}
	if t.Bucket == "" {
		d, err := deployment.Describe(ctx, cfn, region, managed)
		if err != nil {
			return target{}, fmt.Errorf("SAM's artifact bucket (%w): the first deploy is guided, see docs/deploying.md", err)
		}
		if t.Bucket, err = d.Output("SourceBucket"); err != nil {
			return target{}, err
		}
	}
	if t.KeyARN == "" || t.Model == "" {
		// What the overrides leave out, SAM deploys as the stack has it.
		var d deployment.Deployment
		err := errors.New("samconfig.toml names no stack")
		if sc.StackName != "" {
			d, err = deployment.Describe(ctx, cfn, region, sc.StackName)
		}
		switch {
		case err == nil:
			t.KeyARN, t.Model = or(t.KeyARN, d.Parameters["GeminiApiKeyArn"]), or(t.Model, d.Parameters["GeminiModel"])
		case t.KeyARN == "":
			return target{}, fmt.Errorf("the Gemini key's ARN is not among samconfig.toml's parameter_overrides, and %w", err)
		}
	}
	if t.KeyARN == "" {
		return target{}, fmt.Errorf("the stack %s has no GeminiApiKeyArn parameter", sc.StackName)
	}
	t.Model = or(t.Model, gemini.DefaultModel)
	return t, nil
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
// Gemini key from its secret, and admits or refuses the current prompt
// (gate.run).
func deployCheck(ctx context.Context, cfg aws.Config, sc samconfig.Config, o deployOptions, out io.Writer) error {
	t, err := resolveTarget(ctx, cloudformation.NewFromConfig(cfg), sc, cfg.Region, o.Bucket, o.ManagedStack)
	if err != nil {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	key, err := config.NewAWSSecrets(cfg).Secret(ctx, t.KeyARN)
	if err != nil {
		return fmt.Errorf("%w: read the deployment's Gemini key: %w", errRefused, err)
	}
	model, err := gemini.New(ctx, gemini.Options{APIKey: key, Model: t.Model, BaseURL: o.GeminiBase})
	if err != nil {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	return gate{S3: awsenv.S3(cfg), Bucket: t.Bucket, Model: model, Name: t.Model,
		Verdicts: o.Verdicts, Chat: o.Chat, MaxRate: o.MaxRate, Now: o.Now, Out: out}.run(ctx)
}
