# The project's vocabulary. `make run` starts the local stack; `make test` is
# everything CI runs. Tools that are missing are installed first.

SHELL := /bin/bash
GO    ?= go
TOOLS := $(CURDIR)/.build/tools
# Python tools the machine's python3 lacks go into this virtual environment
# (infra/pytools/install.sh), first on PATH so its python3 runs moto.
VENV  := $(CURDIR)/.build/venv
export PATH := $(TOOLS):$(VENV)/bin:$(PATH)

STATICCHECK_VERSION := v0.8.2
STRIPE_MOCK_VERSION := v0.203.0
MOTO_SPEC           := moto[server]==5.2.1
CFN_LINT_SPEC       := cfn-lint==1.51.0
# The official x402 client (infra/x402client): npm ci's record of the install.
X402CLIENT          := infra/x402client/node_modules/.package-lock.json
# Fuzz budgets are execution counts, not durations: a duration races Go's fuzz
# coordinator at the deadline and fails with a bare "context deadline exceeded"
# (go.dev/issue/75804, fixed in Go 1.27). FUZZTIME=30s overrides every budget.
FUZZTIME ?=

.PHONY: run run-tools test lint fmt-check vet staticcheck cfn-lint tracked-files unit fuzz fuzz-core crash bench bench-burst cost prompt-check build deploy smoke smoke-wallet ops inbox-replay chat-price x402-pay mcp-pay invoke tools clean

# How every function's bootstrap is built, by `make build` and by `sam build`
# (BuildMethod: makefile runs build-<LogicalId> below with ARTIFACTS_DIR set).
LAMBDA_ENV   := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_FLAGS := -trimpath -ldflags='-s -w' -tags lambda.norpc,grpcnotrace
# The template's functions: <Name>Function builds ./functions/<name>.
FUNCTIONS    := Checkout Webhook Generator Mailer Feedback Verdict Pages DeadLetter Health Smoke Ops Inbox Agent Chat

# The local command is built with cgo off, as the stack builds the
# functions: with cgo on, net and every package above it (the AWS SDK among
# them) compile differently, and a first run compiled them twice.
LOCAL_BUILD := CGO_ENABLED=0 $(GO) build -o .build/local ./infra/local

## run: the whole stack on this machine (moto, fake Stripe, every function's bootstrap) on http://localhost:3000
run: run-tools
	@echo "[make] building the local stack's command (./infra/local): about 2 minutes on a first run, with Go's build cache empty; seconds after"
	@$(LOCAL_BUILD)
	@exec .build/local

## invoke: one function like `sam local invoke`, e.g. make invoke FN=WebhookFunction EVENT=events/webhook/checkout-session-completed.json
invoke:
	@$(LOCAL_BUILD)
	@exec .build/local invoke $(FN) -e $(EVENT)

## test: formatting, vet, staticcheck, cfn-lint, every test with -race (component tests against moto and the fakes, the end-to-end test through the local stack, the stripe-mock contract test; every fuzz target's seeds among them), then short fuzz runs of the content filter, the crosscheck, the x402 payment header, the address canonicaliser, the sign-in form and the session cookie
test: tools lint unit fuzz-core

lint: fmt-check vet staticcheck cfn-lint tracked-files

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# vet, staticcheck (through go list -export) and the bootstraps the end-to-end
# tests build all compile with cgo off, as Lambda's builds do, so that a cold
# machine compiles the dependencies once for all three, not three times.
vet:
	CGO_ENABLED=0 $(GO) vet ./...

staticcheck:
	CGO_ENABLED=0 staticcheck ./...

cfn-lint:
	cfn-lint template.yaml

# No built binary and no file over 1 MB is tracked (generated goldens excepted).
tracked-files:
	$(GO) run ./infra/trackedfiles

# One moto server serves every test package; each test provisions its own
# uniquely named copy of the template's resources. serve.py applies each
# DynamoDB item's and S3 key's requests one at a time, as atomically as AWS
# does, and requests to different items, tables and keys together.
# The end-to-end tests build every function's bootstrap as the local stack
# does; building them first, alone, keeps those builds from competing with
# the compilation of every test binary on a cold machine. Their package is
# named first so that its tests, the longest, start first. Test binaries are
# linked without DWARF (-w): some seventy race-instrumented links are much
# of a cold run's time, and stack traces do not need it. Four test
# binaries run at once on two cores (-p 4), and four parallel tests within
# one (-parallel 4: the end-to-end stacks): most of a test's time is spent
# waiting on moto, a stack's processes or a fake, and with two the cores
# sat idle two fifths of the run (docs/performance.md).
unit:
	CGO_ENABLED=0 $(GO) build -o .build/warm/ ./functions/...
	$(call with-moto,ORACLE_REQUIRE_TOOLS=1 $(GO) test -race -ldflags=-w -count=1 -p 4 -parallel 4 -timeout 9m ./infra/local/stack ./...)

## fuzz: short fuzz runs of the content filter, the crosscheck, the x402 payment header's decoder, the address canonicaliser, the sign-in form, the session cookie, the query chunking, the webhook's parsing, its event's and session's scanner against encoding/json, the model reply's parsing, the inbox's message parsing and the MCP direct path against the go-sdk
fuzz: fuzz-core
	$(GO) test -run '^$$' -fuzz '^FuzzChunkRoundTrip$$' -fuzztime $(or $(FUZZTIME),20000x) ./shared/stripex
	$(GO) test -run '^$$' -fuzz '^FuzzWebhookVerify$$' -fuzztime $(or $(FUZZTIME),20000x) ./functions/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEnvelope$$' -fuzztime $(or $(FUZZTIME),20000x) ./shared/stripex
	$(GO) test -run '^$$' -fuzz '^FuzzSessionModeFromJSON$$' -fuzztime $(or $(FUZZTIME),20000x) ./shared/stripex
	$(GO) test -run '^$$' -fuzz '^FuzzParseAnalysis$$' -fuzztime $(or $(FUZZTIME),100000x) ./shared/oracle
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),20000x) ./shared/inbox
	$(GO) test -run '^$$' -fuzz '^FuzzTheDirectPath$$' -fuzztime $(or $(FUZZTIME),20000x) ./functions/agent

# make test fuzzes only the targets whose packages need neither the AWS
# SDK nor Stripe's client (the content filter, the crosscheck, and every
# decoder of what a stranger sends: the x402 payment header, an address,
# the sign-in form, the session cookie): the fuzzer instruments every
# package a target's test binary links, and for the other five that is a
# third compilation of every dependency, over a minute on a cold machine.
# Their seeds run with every other test.
fuzz-core:
	$(GO) test -run '^$$' -fuzz '^FuzzFilter$$' -fuzztime $(or $(FUZZTIME),30000x) ./shared/sosfilter
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(or $(FUZZTIME),200000x) ./shared/crosscheck
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePayment$$' -fuzztime $(or $(FUZZTIME),20000x) ./shared/x402
	$(GO) test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(or $(FUZZTIME),20000x) ./shared/mailaddr
	$(GO) test -run '^$$' -fuzz '^FuzzFormToken$$' -fuzztime $(or $(FUZZTIME),20000x) ./shared/chatsession
	$(GO) test -run '^$$' -fuzz '^FuzzSessionCookie$$' -fuzztime $(or $(FUZZTIME),20000x) ./shared/chatsession

## crash: the crash-injection test in full: CRASH_ORDERS (10) orders killed with SIGKILL at each of the generator's and the mailer's crash points (shared/crashpoint), each ending with one verdict, one email (two when killed after the send, before its record) and the generator's audit records of its verdict; prints each point's time and the send-to-record window (log in .build/crash.log). make test runs it with one order per point
CRASH_ORDERS ?= 10
crash:
	$(call with-moto,ORACLE_CRASH_ORDERS=$(CRASH_ORDERS) $(GO) test -race -count=1 -timeout 30m -run '^TestCrashAtEveryStep$$' -v ./infra/local/stack \
		| tee .build/crash.log | grep -E '^(\s*---|ok|FAIL|PASS|privacy|\s+crash_test)' || { echo "(the whole log: .build/crash.log)"; exit 1; })

## bench: the benchmarks behind the performance budgets in docs/performance.md (each package with moto as make run starts it, one package at a time, output in .build/bench.txt), then one table: each budget, its figure, its limit, pass or fail; fails when a budget fails or its benchmark is missing
# One package's benchmarks at a time (-p 1): two at once on two cores
# measured each other (a cold start 127 ms beside another package's
# benchmarks, 25 ms alone).
# Each test binary starts moto as make run does (a process per service
# group, infra/motoserver), so the pipeline's figures are make run's.
bench:
	@set -uo pipefail; mkdir -p .build; unset ORACLE_MOTO_ENDPOINT; status=0; \
	$(GO) test -p 1 -run '^$$' -bench . -benchmem -timeout 30m ./... 2>&1 | tee .build/bench.txt || status=1; \
	echo; $(GO) run ./infra/benchreport .build/bench.txt || status=1; exit $$status

# Runs a command with a moto server of its own, its endpoint
# in ORACLE_MOTO_ENDPOINT and its log in .build/moto-<target>.log.
define with-moto
	@set -euo pipefail; mkdir -p .build; \
	port=$$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'); \
	python3 infra/motoserver/serve.py 127.0.0.1 $$port >.build/moto-$@.log 2>&1 & moto=$$!; \
	trap 'kill $$moto 2>/dev/null' EXIT; \
	for i in $$(seq 1 150); do curl -sf http://127.0.0.1:$$port/moto-api/ >/dev/null && break; sleep 0.1; done; \
	curl -sf http://127.0.0.1:$$port/moto-api/ >/dev/null || { echo "moto server did not start:"; cat .build/moto-$@.log; exit 1; }; \
	export ORACLE_MOTO_ENDPOINT=http://127.0.0.1:$$port; $(1)
endef

## bench-burst: 1,000 orders paid at once through the local stack with an instant model (all emailed within 2 minutes, or it fails), then 1,000 more while it answers 429 for a minute: none lost or doubled, the generator's cap held; prints throughput and payment-to-email p50/p95/p99 (figures in .build/burst-full.json)
# Not with-moto's one serve.py: the test starts moto as a process per
# service group (infra/motoserver's Start), so that DynamoDB's requests are
# answered beside the others' on the second core.
bench-burst:
	@set -euo pipefail; mkdir -p .build; \
	ORACLE_BURST=full ORACLE_BURST_FIGURES=$(CURDIR)/.build/burst-full.json $(GO) test -count=1 -timeout 60m -run '^TestBurst$$' -v ./infra/local/stack | tee .build/bench-burst.log | grep -E '^(---|ok|FAIL|PASS|privacy|\s+burst_test)'

## cost: the infrastructure cost of a verdict (excluding the model) and the idle cost per month, each line beside its figure before issue 30, from a metered burst of 50 + 50 orders on the local stack (FIGURES=file: from a burst already run, e.g. .build/burst-full.json); the model's cost of a verdict per tier and of a Sisters Chat exchange; and each sale's margin in one table; fails when a verdict or the idle month is over its goal
cost:
ifdef FIGURES
	$(GO) run ./infra/cost $(FIGURES)
else
	$(call with-moto,ORACLE_BURST=cost ORACLE_BURST_FIGURES=$(CURDIR)/.build/burst-reduced.json $(GO) test -count=1 -timeout 20m -run '^TestBurst$$' ./infra/local/stack >/dev/null)
	$(GO) run ./infra/cost .build/burst-reduced.json
endif

## prompt-check: asks the real model (GEMINI_API_KEY) for 50 verdicts and 20 Sisters Chat replies with the current prompts and reports how many the content filter would touch; fails above MAX_RATE (default 0). It measures a prompt while it is written: make deploy runs and records the deployment's own check
MAX_RATE ?= 0
prompt-check:
	$(GO) run ./infra/promptcheck -n 50 -max-rate $(MAX_RATE)

## build: every function's bootstrap for Lambda (linux/arm64) into .build/lambda/<name>/, exactly as `sam build` makes them
build:
	@set -e; for fn in $(FUNCTIONS); do \
		name=$$(echo $$fn | tr A-Z a-z); \
		$(MAKE) --no-print-directory build-$${fn}Function ARTIFACTS_DIR=$(CURDIR)/.build/lambda/$$name; \
		echo "built .build/lambda/$$name/bootstrap"; \
	done

# sam build's entry point, one per function (make build uses it too).
build-%Function:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/$(shell echo $* | tr A-Z a-z)

# The deployed stack and its region, as samconfig.toml names them.
STACK  ?= $(or $(shell sed -n 's/^stack_name *= *"\(.*\)"/\1/p' samconfig.toml | head -1),oracle)
REGION ?= $(shell sed -n 's/^region *= *"\(.*\)"/\1/p' samconfig.toml | head -1)
SMOKE_TARGET = $(if $(LOCAL),-local $(CURDIR)/.build/stack-local.json,-stack $(STACK))

## deploy: admit the prompt only with a passing contamination check in the deployment's bucket (run against the deployment's model with its key when none is recorded; PROMPT_CHECK_BUCKET overrides the bucket), build every function anew with SAM (no build cache), deploy with samconfig.toml's settings and no prompt (run `sam deploy --guided` once first), then run the smoke test against what was deployed and say the result
deploy:
	$(GO) run ./infra/promptcheck -deploy -max-rate $(MAX_RATE) $(if $(REGION),-region $(REGION)) $(if $(PROMPT_CHECK_BUCKET),-bucket $(PROMPT_CHECK_BUCKET))
	sam build --no-cached && sam deploy --no-confirm-changeset
	@$(GO) build -o .build/smoke ./infra/smoke
	@set +e; $(if $(REGION),AWS_REGION=$(REGION)) .build/smoke $(SMOKE_TARGET); code=$$?; \
	case $$code in \
	0) echo "deploy: deployed, and the smoke test passed";; \
	1) echo "deploy: DEPLOYED BUT BROKEN: a smoke stage failed (above); see docs/operating.md, SMOKE_FAILED";; \
	*) echo "deploy: deployed, but the smoke test could not run (exit $$code): see docs/deploying.md, the smoke test";; \
	esac; exit $$code

## ops: one operator action on `make run`'s stack, e.g. make ops ACTION=list; make ops ACTION=refund SESSION=cs_test_a1B2 BY=ana REASON='asked by email'; make ops ACTION=chat EMAIL=ada@example.com; make ops ACTION=chat-erase EMAIL=ada@example.com BY=ana REASON='asked by email'; with REMOTE=1 on the deployed stack's OpsFunction (sam remote invoke). Variables: ACTION SESSION BY (or AUTHORISED_BY) REASON MODE TIER QUERY KIND FORCE=1 REVEAL=1 QUEUE FROM TO DAY SHOW EMAIL N TX
ops:
	@mkdir -p .build && python3 infra/opsverb/ops.py request > .build/ops-request.json
ifdef REMOTE
	@sam remote invoke OpsFunction --stack-name $(STACK) $(if $(REGION),--region $(REGION)) --event-file .build/ops-request.json --output text >.build/ops-answer.json 2>.build/ops-remote.log \
		|| { echo "make ops: sam remote invoke failed (credentials, region or stack?):"; cat .build/ops-remote.log; exit 1; }
	@python3 infra/opsverb/ops.py answer <.build/ops-answer.json
else
	@$(GO) build -o .build/local ./infra/local
	@set -o pipefail; .build/local invoke OpsFunction -e .build/ops-request.json 2>.build/ops.log | python3 infra/opsverb/ops.py answer || { echo "(the function's log: .build/ops.log)"; exit 1; }
endif

## inbox-replay: process again the messages the inbox function failed on past Lambda's two retries (the records the deadletter function keeps from its on-failure destination, INBOX_FAILED), each record removed once processed; ID=<id> (an inbox alert's SHOW id) one message, recorded or not; on `make run`'s stack, or with REMOTE=1 the deployed one. Prints what became of each message (processed, gone, failed) and exits 1 when one failed. A message already processed changes nothing
inbox-replay:
	@case "$(ID)" in *[!A-Za-z0-9-]*) echo "usage: make inbox-replay [ID=<stored message id>] [REMOTE=1]"; exit 2;; esac
	@mkdir -p .build && echo '{"replay": {$(if $(ID),"ids": ["$(ID)"])}}' > .build/inbox-replay.json
ifdef REMOTE
	@sam remote invoke InboxFunction --stack-name $(STACK) $(if $(REGION),--region $(REGION)) --event-file .build/inbox-replay.json --output text >.build/inbox-replay-answer.json 2>.build/inbox-replay-remote.log \
		|| { echo "make inbox-replay: sam remote invoke failed (credentials, region or stack?):"; cat .build/inbox-replay-remote.log; exit 1; }
	@python3 infra/opsverb/ops.py answer inbox <.build/inbox-replay-answer.json
else
	@$(GO) build -o .build/local ./infra/local
	@set -o pipefail; .build/local invoke InboxFunction -e .build/inbox-replay.json 2>.build/inbox-replay.log | python3 infra/opsverb/ops.py answer inbox || { echo "(the function's log: .build/inbox-replay.log)"; exit 1; }
endif

## chat-price: makes Sisters Chat's Stripe Price (C$5.00 a month, lookup key sisters_chat_monthly_cad) once, in `make run`'s fake Stripe, or with REMOTE=1 in the Stripe account of the deployed stack (STACK; its keys, or STRIPE_SECRET_KEY from the environment); a Price already there is reported, one at another price refused (exit 1)
chat-price:
	@$(GO) build -o .build/chatprice ./infra/chatprice
	@$(if $(REGION),AWS_REGION=$(REGION)) .build/chatprice $(if $(REMOTE),-stack $(STACK),-local $(CURDIR)/.build/stack-local.json)

## smoke: the smoke test's thirteen stages against the deployed stack (STACK), or with LOCAL=1 against `make run`'s; the command (.build/smoke) exits 0 passed, 1 a stage failed, 2 the environment check failed
smoke:
	@$(GO) build -o .build/smoke ./infra/smoke
	@$(if $(REGION),AWS_REGION=$(REGION)) .build/smoke $(SMOKE_TARGET)

## smoke-wallet: prints a fresh key for the smoke test's Base Sepolia wallet and its address (X402SmokeKeyArn's secret and X402SmokePayer; docs/deploying.md); nothing is stored
smoke-wallet:
	@$(GO) build -o .build/smoke ./infra/smoke
	@.build/smoke -new-wallet

## x402-pay: pays `make run`'s agent rail as any agent would, with the official x402 client (infra/x402client) and a fresh key (X402_PRIVATE_KEY: a key of your own), e.g. make x402-pay TIER=quick QUERY='Should I take the job?'; PAYMENT_ID=<id> (16-128 of A-Za-z0-9_-) adds the payment-identifier extension; RETRY=1 sends the same signed payment once more after its answer (under PAYMENT_ID, or a fresh id): the same answer, paid once; prints the answer, the decoded PAYMENT-RESPONSE, the header the client sent and, with RETRY=1, both answers
X402_BASE ?= http://localhost:3000
x402-pay: $(X402CLIENT)
	@case "$(or $(TIER),quick)" in quick) route=/x402/query;; full) route=/x402/query/full;; strategy|premium) route=/x402/query/premium;; \
		*) echo "usage: make x402-pay TIER=quick|full|strategy QUERY='…' [PAYMENT_ID=<id>] [RETRY=1]"; exit 2;; esac; \
	body=$$(node -e 'console.log(JSON.stringify({query: process.env.QUERY ?? ""}))'); \
	$(X402_PAYMENT_ID) \
	node infra/x402client/pay.mjs $${id:+--payment-id "$$id"} $(if $(RETRY),--retry) -- "$(X402_BASE)$$route" "$$body"

## mcp-pay: buys a tier's verdict from `make run`'s MCP server (POST /mcp) as any agent would: the official MCP client and x402 client (infra/x402client/mcp.mjs) and a fresh key (X402_PRIVATE_KEY: a key of your own), e.g. make mcp-pay TIER=quick QUERY='Should I take the job?'; PAYMENT_ID=<id> and RETRY=1 as for x402-pay; prints the tools, the payment-required result, the paid result (the verdict, or an order_id for oracle_result) and its x402/payment-response
mcp-pay: $(X402CLIENT)
	@case "$(or $(TIER),quick)" in quick) tool=oracle_quick_take;; full) tool=oracle_full_breakdown;; strategy|premium) tool=oracle_strategy_session;; \
		*) echo "usage: make mcp-pay TIER=quick|full|strategy QUERY='…' [PAYMENT_ID=<id>] [RETRY=1]"; exit 2;; esac; \
	args=$$(node -e 'console.log(JSON.stringify({query: process.env.QUERY ?? ""}))'); \
	$(X402_PAYMENT_ID) \
	node infra/x402client/mcp.mjs $${id:+--payment-id "$$id"} $(if $(RETRY),--retry) -- "$(X402_BASE)/mcp" "$$tool" "$$args"

# The payment identifier of x402-pay and mcp-pay, in the shell's id: the
# environment's PAYMENT_ID (read there, never pasted into the command), or
# with RETRY=1 a fresh one, since only a payment carrying one is answered
# again rather than refused as a replay.
X402_PAYMENT_ID = id="$${PAYMENT_ID:-}"; \
	if [ -z "$$id" ] && [ -n "$(RETRY)" ]; then id=$$(node -e 'console.log("retry_" + require("crypto").randomBytes(12).toString("hex"))'); fi;

# The official x402 client, installed by npm ci exactly as its lock file pins
# it, again whenever the lock or package.json is newer than the install.
$(X402CLIENT): infra/x402client/package.json infra/x402client/package-lock.json
	@command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	@cd infra/x402client && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	@touch $@

## run-tools: what `make run` needs when it is missing: moto (into .build/venv when python3 cannot import it) and curl
run-tools:
	@infra/pytools/install.sh $(VENV) 'flask_cors,werkzeug,moto=$(MOTO_SPEC)'
	@command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq curl; }

## tools: install what the tests need when it is missing
tools: run-tools $(X402CLIENT)
	@mkdir -p $(TOOLS) .build
	@command -v staticcheck >/dev/null || GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@command -v stripe-mock >/dev/null || GOBIN=$(TOOLS) $(GO) install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION)
	@infra/pytools/install.sh $(VENV) 'cfnlint=$(CFN_LINT_SPEC)'
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }
	@# The content filter's look-alike table is checked against ICU, and its
	@# false-positive corpus reads Debian's word list.
	@/usr/bin/python3 -c 'import icu' 2>/dev/null || { apt-get update -qq && apt-get install -y -qq python3-icu; }
	@test -f /usr/share/dict/american-english || { apt-get update -qq && apt-get install -y -qq wamerican; }

clean:
	rm -rf .build .aws-sam
