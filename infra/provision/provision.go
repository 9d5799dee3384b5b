// Package provision creates the template's stateful resources (tables,
// queues, the audit bucket, the alerts topic and the secrets) in moto server,
// for the local stack and for component tests, and resolves each function's
// environment the way CloudFormation would.
package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/awsenv"
)

// Account is moto's default account id.
const Account = "123456789012"

// Options says what to provision and where.
type Options struct {
	Template *sam.Template
	AWS      aws.Config
	// Prefix makes physical names unique, e.g. "oracle-local-" for the
	// local stack or a random prefix per test.
	Prefix string
	// Params overrides template parameters (non-secret ones).
	Params map[string]string
	// Secrets maps a parameter that takes a secret ARN (e.g.
	// "StripeSecretKeyArn") to the secret's value. Each is stored as an SSM
	// SecureString and the parameter is set to its ARN, so functions read secrets
	// exactly as in production. An empty value leaves the parameter empty.
	Secrets map[string]string
	// StackName is the stack's name (AWS::StackName): "oracle-local" when
	// empty.
	StackName string
	// Alarms also creates the template's CloudWatch alarms (moto keeps
	// them and fires nothing): what a test of two stacks in one account
	// compares.
	Alarms bool
}

// Stack is what was provisioned: every resource's Ref and attributes.
type Stack struct {
	Template *sam.Template
	Values   *sam.Values
}

// Provision creates the resources; it is idempotent, so re-running it against
// a moto server that already has them changes nothing.
func Provision(ctx context.Context, o Options) (*Stack, error) {
	v := &sam.Values{
		Params:    map[string]string{},
		Refs:      map[string]string{},
		Attrs:     map[string]string{},
		Region:    o.AWS.Region,
		Account:   Account,
		StackName: o.StackName,
	}
	for k, val := range o.Params {
		v.Params[k] = val
	}
	st := &Stack{Template: o.Template, Values: v}
	if err := st.secrets(ctx, o); err != nil {
		return nil, err
	}
	// Names and ARNs of everything first, so any property may refer to any
	// resource; then the resources themselves.
	for _, r := range o.Template.Resources {
		st.name(o.Prefix, r)
	}
	steps := []struct {
		typ string
		fn  func(context.Context, Options, sam.Resource) error
	}{
		{"AWS::DynamoDB::Table", st.table},
		{"AWS::SNS::Topic", st.topic},
		{"AWS::S3::Bucket", st.bucket},
		{"AWS::SQS::Queue", st.queue},
	}
	for _, s := range steps {
		for _, r := range o.Template.OfType(s.typ) {
			ok, err := st.enabled(r)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if err := s.fn(ctx, o, r); err != nil {
				return nil, fmt.Errorf("provision %s: %w", r.LogicalID, err)
			}
		}
	}
	// Redrive policies refer to other queues, so they are set once all exist;
	// subscriptions join topics and queues.
	for _, r := range o.Template.OfType("AWS::SQS::Queue") {
		if err := st.redrive(ctx, o, r); err != nil {
			return nil, fmt.Errorf("provision %s redrive: %w", r.LogicalID, err)
		}
	}
	if o.Alarms {
		for _, r := range o.Template.OfType("AWS::CloudWatch::Alarm") {
			if err := st.alarm(ctx, o, r); err != nil {
				return nil, fmt.Errorf("provision %s: %w", r.LogicalID, err)
			}
		}
	}
	for _, r := range o.Template.OfType("AWS::SNS::Subscription") {
		if ok, err := st.enabled(r); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := st.subscription(ctx, o, r); err != nil {
			return nil, fmt.Errorf("provision %s: %w", r.LogicalID, err)
		}
	}
	return st, nil
}

func (st *Stack) enabled(r sam.Resource) (bool, error) {
	if r.Condition == "" {
		return true, nil
	}
	return st.Template.Condition(r.Condition, st.Values)
}

func (st *Stack) secrets(ctx context.Context, o Options) error {
	names := make([]string, 0, len(o.Secrets))
	for k := range o.Secrets {
		names = append(names, k)
	}
	sort.Strings(names)
	params := ssm.NewFromConfig(o.AWS)
	for _, param := range names {
		value := o.Secrets[param]
		if value == "" {
			st.Values.Params[param] = ""
			continue
		}
		// The documented kind (docs/deploying.md): a standard-tier
		// SecureString under the account's aws/ssm key, named by path.
		name := "/" + strings.TrimSuffix(o.Prefix, "-") + "/" + strings.TrimSuffix(param, "Arn")
		if _, err := params.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value),
			Type: ssmtypes.ParameterTypeSecureString, Tier: ssmtypes.ParameterTierStandard, Overwrite: aws.Bool(true)}); err != nil {
			return fmt.Errorf("put parameter %s: %w", name, err)
		}
		out, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		if err != nil {
			return fmt.Errorf("read parameter %s: %w", name, err)
		}
		st.Values.Params[param] = aws.ToString(out.Parameter.ARN)
	}
	return nil
}

// name records the physical name, Ref and attributes of a resource.
func (st *Stack) name(prefix string, r sam.Resource) {
	v, id, region := st.Values, r.LogicalID, st.Values.Region
	phys := prefix + id
	switch r.Type {
	case "AWS::DynamoDB::Table":
		v.Refs[id] = phys
		v.Attrs[id+".Arn"] = fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", region, Account, phys)
	case "AWS::SQS::Queue":
		v.Refs[id] = "" // the URL, known once created
		v.Attrs[id+".QueueName"] = phys
		v.Attrs[id+".Arn"] = fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, Account, phys)
	case "AWS::S3::Bucket":
		b := strings.ToLower(phys)
		v.Refs[id] = b
		v.Attrs[id+".Arn"] = "arn:aws:s3:::" + b
	case "AWS::SNS::Topic":
		v.Refs[id] = fmt.Sprintf("arn:aws:sns:%s:%s:%s", region, Account, phys)
		v.Attrs[id+".TopicName"] = phys
	case "AWS::Logs::LogGroup":
		v.Refs[id] = phys
		v.Attrs[id+".Arn"] = fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s", region, Account, phys)
	default:
		v.Refs[id] = phys
	}
}

func (st *Stack) resolved(r sam.Resource) (map[string]any, error) {
	p, err := st.Template.Resolve(r.Properties, st.Values)
	if err != nil {
		return nil, err
	}
	m, _ := p.(map[string]any)
	return m, nil
}

func (st *Stack) table(ctx context.Context, o Options, r sam.Resource) error {
	p, err := st.resolved(r)
	if err != nil {
		return err
	}
	name := st.Values.Refs[r.LogicalID]
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: ddbtypes.BillingModePayPerRequest}
	for _, a := range list(p["AttributeDefinitions"]) {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(str(a["AttributeName"])),
			AttributeType: ddbtypes.ScalarAttributeType(str(a["AttributeType"])),
		})
	}
	in.KeySchema = keySchema(p["KeySchema"])
	for _, g := range list(p["GlobalSecondaryIndexes"]) {
		proj := mapOf(g["Projection"])
		projection := &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(str(proj["ProjectionType"]))}
		nonKey, _ := proj["NonKeyAttributes"].([]any)
		for _, a := range nonKey {
			projection.NonKeyAttributes = append(projection.NonKeyAttributes, fmt.Sprint(a))
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(str(g["IndexName"])),
			KeySchema:  keySchema(g["KeySchema"]),
			Projection: projection,
		})
	}
	db := dynamodb.NewFromConfig(o.AWS)
	_, err = db.CreateTable(ctx, in)
	var inUse *ddbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	if ttl := mapOf(p["TimeToLiveSpecification"]); str(ttl["Enabled"]) == "true" {
		_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(name),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(str(ttl["AttributeName"])), Enabled: aws.Bool(true)},
		})
		if err != nil && !strings.Contains(err.Error(), "already enabled") {
			return fmt.Errorf("enable TTL on %s: %w", name, err)
		}
	}
	return nil
}

func keySchema(v any) []ddbtypes.KeySchemaElement {
	var out []ddbtypes.KeySchemaElement
	for _, k := range list(v) {
		out = append(out, ddbtypes.KeySchemaElement{AttributeName: aws.String(str(k["AttributeName"])), KeyType: ddbtypes.KeyType(str(k["KeyType"]))})
	}
	return out
}

func (st *Stack) topic(ctx context.Context, o Options, r sam.Resource) error {
	_, err := sns.NewFromConfig(o.AWS).CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(st.Values.Attrs[r.LogicalID+".TopicName"])})
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	return nil
}

// subscription subscribes a queue to a topic (other subscribers are not
// local), once: a moto that already
// holds the subscription (a second run of the stack) keeps the one it has,
// so no event is delivered twice.
func (st *Stack) subscription(ctx context.Context, o Options, r sam.Resource) error {
	p, err := st.resolved(r)
	if err != nil {
		return err
	}
	topic, protocol, endpoint := str(p["TopicArn"]), str(p["Protocol"]), str(p["Endpoint"])
	if protocol != "sqs" {
		return nil // an email or HTTPS subscriber is a person or a service elsewhere, not part of the local stack
	}
	c := sns.NewFromConfig(o.AWS)
	subs, err := c.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil {
		return fmt.Errorf("list subscriptions of %s: %w", topic, err)
	}
	for _, sub := range subs.Subscriptions {
		if aws.ToString(sub.Protocol) == protocol && aws.ToString(sub.Endpoint) == endpoint {
			return nil
		}
	}
	in := &sns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(protocol), Endpoint: aws.String(endpoint)}
	if str(p["RawMessageDelivery"]) == "true" {
		in.Attributes = map[string]string{"RawMessageDelivery": "true"}
	}
	if _, err := c.Subscribe(ctx, in); err != nil {
		return fmt.Errorf("subscribe %s to %s: %w", endpoint, topic, err)
	}
	return nil
}

func (st *Stack) bucket(ctx context.Context, o Options, r sam.Resource) error {
	p, err := st.resolved(r)
	if err != nil {
		return err
	}
	name := st.Values.Refs[r.LogicalID]
	c := awsenv.S3(o.AWS)
	lock := str(p["ObjectLockEnabled"]) == "true"
	in := &s3.CreateBucketInput{Bucket: aws.String(name), ObjectLockEnabledForBucket: aws.Bool(lock)}
	if o.AWS.Region != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(o.AWS.Region)}
	}
	_, err = c.CreateBucket(ctx, in)
	var owned *s3types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	// LifecycleConfiguration is knowingly not applied: moto never runs a
	// lifecycle rule, and no test waits days for one.
	if str(mapOf(p["VersioningConfiguration"])["Status"]) == "Enabled" {
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
			Bucket:                  aws.String(name),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled},
		}); err != nil {
			return fmt.Errorf("enable versioning on %s: %w", name, err)
		}
	}
	if def := mapOf(mapOf(mapOf(p["ObjectLockConfiguration"])["Rule"])["DefaultRetention"]); lock && len(def) > 0 {
		days, _ := strconv.Atoi(str(def["Days"]))
		// moto refuses to change the lock of a bucket that holds objects, so
		// an existing bucket already locked as asked is left alone.
		if cur, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(name)}); err == nil &&
			cur.ObjectLockConfiguration != nil && cur.ObjectLockConfiguration.Rule != nil && cur.ObjectLockConfiguration.Rule.DefaultRetention != nil &&
			string(cur.ObjectLockConfiguration.Rule.DefaultRetention.Mode) == str(def["Mode"]) &&
			aws.ToInt32(cur.ObjectLockConfiguration.Rule.DefaultRetention.Days) == int32(days) {
			return nil
		}
		if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{
			Bucket: aws.String(name),
			ObjectLockConfiguration: &s3types.ObjectLockConfiguration{
				ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
				Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{
					Mode: s3types.ObjectLockRetentionMode(str(def["Mode"])),
					Days: aws.Int32(int32(days)),
				}},
			},
		}); err != nil {
			return fmt.Errorf("object lock on %s: %w", name, err)
		}
	}
	return nil
}

func (st *Stack) queue(ctx context.Context, o Options, r sam.Resource) error {
	p, err := st.resolved(r)
	if err != nil {
		return err
	}
	attrs := map[string]string{}
	for _, k := range []string{"VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds"} {
		if s := str(p[k]); s != "" {
			attrs[k] = s
		}
	}
	name := st.Values.Attrs[r.LogicalID+".QueueName"]
	out, err := sqs.NewFromConfig(o.AWS).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	var exists *sqstypes.QueueNameExists
	if errors.As(err, &exists) {
		got, gerr := sqs.NewFromConfig(o.AWS).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if gerr != nil {
			return fmt.Errorf("queue %s: %w", name, gerr)
		}
		out, err = &sqs.CreateQueueOutput{QueueUrl: got.QueueUrl}, nil
	}
	if err != nil {
		return fmt.Errorf("create queue %s: %w", name, err)
	}
	st.Values.Refs[r.LogicalID] = aws.ToString(out.QueueUrl)
	st.Values.Attrs[r.LogicalID+".QueueUrl"] = aws.ToString(out.QueueUrl)
	return nil
}

func (st *Stack) redrive(ctx context.Context, o Options, r sam.Resource) error {
	p, err := st.resolved(r)
	if err != nil {
		return err
	}
	rp := mapOf(p["RedrivePolicy"])
	if len(rp) == 0 {
		return nil
	}
	b, err := json.Marshal(map[string]any{"deadLetterTargetArn": str(rp["deadLetterTargetArn"]), "maxReceiveCount": str(rp["maxReceiveCount"])})
	if err != nil {
		return err
	}
	_, err = sqs.NewFromConfig(o.AWS).SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(st.Values.Refs[r.LogicalID]),
		Attributes: map[string]string{"RedrivePolicy": string(b)},
	})
	return err
}

// Ref is a resource's Ref value (table name, queue URL, topic ARN, bucket).
func (st *Stack) Ref(logicalID string) string { return st.Values.Refs[logicalID] }

// Attr is a resource attribute such as "GenerateQueue.Arn".
func (st *Stack) Attr(key string) string { return st.Values.Attrs[key] }

// Env resolves a function's environment variables.
func (st *Stack) Env(f sam.Function) (map[string]string, error) {
	out := make(map[string]string, len(f.Env))
	for k, x := range f.Env {
		s, err := st.Template.ResolveString(x, st.Values)
		if err != nil {
			return nil, fmt.Errorf("%s env %s: %w", f.LogicalID, k, err)
		}
		out[k] = s
	}
	return out, nil
}

// Schedules resolves a function's schedule events. One the template does
// not name is named as CloudFormation names the rule SAM generates for it:
// the function's name and the event's (here behind the stack's prefix, as
// every name is).
func (st *Stack) Schedules(f sam.Function) ([]sam.Schedule, error) {
	out := make([]sam.Schedule, 0, len(f.Schedules))
	for _, e := range f.Schedules {
		s, err := st.Template.Schedule(e, st.Values)
		if err != nil {
			return nil, fmt.Errorf("%s %w", f.LogicalID, err)
		}
		if s.Name == "" {
			s.Name = st.Ref(f.LogicalID) + e.Name
		}
		out = append(out, s)
	}
	return out, nil
}

func list(v any) []map[string]any {
	arr, _ := v.([]any)
	out := make([]map[string]any, 0, len(arr))
	for _, e := range arr {
		out = append(out, mapOf(e))
	}
	return out
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}
