// Package deployment says where one deployment of the service is, for the
// operator's tools (`make smoke`): the stack's outputs and parameters as
// CloudFormation describes them, or as `make run` writes them for the
// local stack, with the local endpoints that stand in for AWS, Stripe and
// Microsoft Graph.
package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// LocalFile is where `make run` writes the local stack's Deployment, under
// the repository root, while it runs.
const LocalFile = ".build/stack-local.json"

// Deployment is one deployed stack.
type Deployment struct {
	// Name is the CloudFormation stack's name, or "local".
	Name   string `json:"name"`
	Region string `json:"region"`
	// Outputs and Parameters are the stack's, by logical name.
	Outputs    map[string]string `json:"outputs"`
	Parameters map[string]string `json:"parameters"`
	// AWSEndpoint is moto server's URL on the local stack; empty in AWS.
	AWSEndpoint string `json:"aws_endpoint,omitempty"`
	// Env is what the local stack sets in every function's environment
	// on top of the template's (the fakes' URLs: STRIPE_API_BASE,
	// AWS_ENDPOINT_URL_SESV2, GRAPH_API_BASE...); empty in AWS.
	Env map[string]string `json:"env,omitempty"`
}

// Output returns a named output, or an error naming the stack when it
// has none (a stack deployed from an older template).
func (d Deployment) Output(name string) (string, error) {
	if v := d.Outputs[name]; v != "" {
		return v, nil
	}
	return "", fmt.Errorf("the stack %s has no output %s: deploy the current template", d.Name, name)
}

// Stacks describes CloudFormation stacks (cloudformation.Client).
type Stacks interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// Describe reads the deployed stack name's outputs and parameters.
func Describe(ctx context.Context, cfn Stacks, region, name string) (Deployment, error) {
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		return Deployment{}, fmt.Errorf("describe the stack %s: %w", name, err)
	}
	if len(out.Stacks) != 1 {
		return Deployment{}, fmt.Errorf("describe the stack %s: %d stacks answered", name, len(out.Stacks))
	}
	st := out.Stacks[0]
	d := Deployment{Name: name, Region: region, Outputs: map[string]string{}, Parameters: map[string]string{}}
	for _, o := range st.Outputs {
		d.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	for _, p := range st.Parameters {
		// A parameter a deploy kept is reported by its resolved value.
		v := aws.ToString(p.ParameterValue)
		if p.ResolvedValue != nil {
			v = aws.ToString(p.ResolvedValue)
		}
		d.Parameters[aws.ToString(p.ParameterKey)] = v
	}
	return d, nil
}

// Read reads a Deployment written by Write.
func Read(path string) (Deployment, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Deployment{}, fmt.Errorf("%s does not exist: is `make run` running?", path)
	}
	if err != nil {
		return Deployment{}, err
	}
	var d Deployment
	if err := json.Unmarshal(b, &d); err != nil {
		return Deployment{}, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Write writes d to path, whole or not at all: a reader never sees half
// of it.
func (d Deployment) Write(path string) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	// The file names secrets only by ARN; it is still the operator's own.
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
