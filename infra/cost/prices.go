package main

// Public on-demand prices in us-east-1 (US East, N. Virginia), in US
// dollars, as AWS's pricing pages gave them on PricesDate; free tiers are
// left out, so the figures hold for an account past them. The region is
// the one samconfig.toml's guided deploy suggests; another region changes
// the cents, rarely the shape.
const PricesDate = "2025-06-01"

const (
	// https://aws.amazon.com/lambda/pricing/ (Arm, first 7.5 billion
	// GB-seconds a month).
	lambdaPerGBSecondArm = 0.0000133334
	lambdaPerRequest     = 0.20 / 1e6

	// https://aws.amazon.com/dynamodb/pricing/on-demand/ (after the
	// November 2024 reduction).
	dynamoPerWriteUnit = 0.625 / 1e6
	dynamoPerReadUnit  = 0.125 / 1e6

	// https://aws.amazon.com/sqs/pricing/ (standard queues, each 64 KB
	// chunk of a request is one request).
	sqsPerRequest = 0.40 / 1e6

	// https://aws.amazon.com/s3/pricing/ (S3 Standard: PUT, COPY, POST,
	// LIST; GET, SELECT and the rest; storage per GB-month).
	s3PerPut          = 0.005 / 1000
	s3PerGet          = 0.0004 / 1000
	s3PerGBMonth      = 0.023
	s3ObjectOverheadB = 8 * 1024 // S3 bills 8 KB of metadata per object in Standard

	// https://aws.amazon.com/sns/pricing/ (standard topics; delivery to
	// SQS is free).
	snsPerPublish = 0.50 / 1e6

	// https://aws.amazon.com/ses/pricing/ (outbound email, per message).
	sesPerMessage = 0.10 / 1000

	// https://aws.amazon.com/api-gateway/pricing/ (HTTP APIs, first 300
	// million requests a month).
	httpAPIPerRequest = 1.00 / 1e6

	// https://aws.amazon.com/cloudwatch/pricing/ (logs ingested per GB;
	// a standard-resolution alarm per month; a dashboard per month, past
	// the three free ones; a custom metric per month).
	logsPerGB         = 0.50
	alarmPerMonth     = 0.10
	dashboardPerMonth = 3.00
	metricPerMonth    = 0.30
	secretPerMonth    = 0.40 // https://aws.amazon.com/secrets-manager/pricing/
	secretsPerCall    = 0.05 / 10000
	// https://aws.amazon.com/systems-manager/pricing/ (Parameter Store:
	// standard parameters and their standard-throughput API calls are
	// free; a SecureString under the aws/ssm key adds no key to pay for).
	ssmStandardPerMonth = 0.0
	kmsKeyPerMonth      = 1.00 // https://aws.amazon.com/kms/pricing/
	kmsPerRequest       = 0.03 / 10000
	xrayPerTrace        = 5.00 / 1e6 // https://aws.amazon.com/xray/pricing/ (traces recorded)
	daysPerMonth        = 30
	secondsPerMonth     = daysPerMonth * 24 * 3600
	sqsIdlePollSeconds  = 20 // Lambda's pollers long-poll an idle queue, 20 s a request
	sqsIdlePollers      = 5  // the pollers an SQS event source keeps at rest
)

// The model's prices: Gemini 2.5 Flash (prompt.ChatThinkingBudget needs a
// Flash model, and gemini.DefaultModel is one), paid tier, text, prompts
// of at most 200,000 tokens, in US dollars per token, as
// https://ai.google.dev/gemini-api/docs/pricing gave them from the
// model's general availability on GeminiPricesDate. Thinking tokens are
// billed as output; the chat's passes think not at all.
const (
	GeminiPricesDate     = "2025-06-17"
	geminiPerInputToken  = 0.30 / 1e6
	geminiPerOutputToken = 2.50 / 1e6
)

// What a sale brings in. The tiers and Sisters Chat are priced in Canadian
// dollars (shared/oracle), converted at the Bank of Canada's daily rate of
// ExchangeRateDate, the Gemini prices' date (about 1.36 Canadian dollars a
// US dollar); a card payment pays Stripe's standard Canadian fee
// (https://stripe.com/en-ca/pricing, domestic cards, on the same date).
// The agent rail is paid in USDC, taken at one US dollar.
const (
	ExchangeRateDate           = "2025-06-17"
	usdPerCAD                  = 0.7350
	stripeCardPercent          = 2.9
	stripeCardFixedCents int64 = 30
)
