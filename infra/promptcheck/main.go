// Command promptcheck measures how often the model's verdicts, for the
// current prompt version, carry internal vocabulary (SPEC_ORACLE_SOS_FILTER
// VC-6, GAP-H): it asks the model for verdicts on a fixed set of
// submissions across the tiers, runs each through the content filter and
// reports the contamination rate. It does the same for the Sisters Chat's
// prompts (prompt.ChatVersion): -chat exchanges through the chat's own
// replier, each first reply filtered, the rate reported apart.
//
// `make prompt-check` runs it against the real model with GEMINI_API_KEY,
// to measure a prompt while it is written; it exits 1 when a rate is above
// -max-rate (default 0: any contaminated verdict rejects a prompt change),
// 2 on a usage or model error.
//
// With -deploy it is `make deploy`'s gate: it reads the deployment from
// samconfig.toml (and the stack as deployed, and the template), asks each
// of the deployment's models with the deployment's key (read from its
// secret) for 50 verdicts, and the primary for 20 chat replies, unless the
// current prompt's check on that model is already recorded, and records
// the result, pass or fail, once, in the deployment's artifact bucket
// under prompt-checks/<stack>/<model>/<version>/<fingerprint>.json. It
// exits 0 only when every such record is a pass, so no prompt reaches
// production without its own check and none whose rate rose (GAP-H).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"42sisters.ai/oracle/infra/awsprofile"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/samconfig"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
)

func main() {
	fs := flag.NewFlagSet("promptcheck", flag.ContinueOnError)
	n := fs.Int("n", minVerdicts, "how many verdicts to ask for (distinct submission and tier pairs, at most 3 per submission)")
	chatN := fs.Int("chat", minChatReplies, "how many chat exchanges to make (distinct messages)")
	maxRate := fs.Float64("max-rate", 0, "the highest contamination rate (0 to 1) that passes")
	model := fs.String("model", gemini.DefaultModel, "the model to ask (not with -deploy: the deployment's)")
	base := fs.String("base", "", "the API's base URL (the fake Gemini); empty means Google (not with -deploy)")
	deploy := fs.Bool("deploy", false, "make deploy's gate: admit the current prompt only with a passing check recorded in the deployment's bucket, running it first when none is")
	bucket := fs.String("bucket", "", "with -deploy: the bucket to keep the checks in; empty means samconfig.toml's s3_bucket or SAM's managed bucket")
	samPath := fs.String("samconfig", "samconfig.toml", "with -deploy: the deployment's samconfig.toml")
	region := fs.String("region", "", "with -deploy: the deployment's region; empty means samconfig.toml's, or AWS_REGION")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	// A check is about 130 calls one after the other; a deploy may check
	// two models.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if *deploy {
		if *base != "" {
			fmt.Fprintln(os.Stderr, "promptcheck: -deploy asks the deployment's own model: a fake's rate says nothing of the prompt")
			os.Exit(2)
		}
		err := runDeploy(ctx, *samPath, *region, deployOptions{Bucket: *bucket, ManagedStack: ManagedStack,
			Verdicts: *n, Chat: *chatN, MaxRate: *maxRate, Now: time.Now}, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "promptcheck:", err)
			if errors.Is(err, errRefused) {
				os.Exit(1)
			}
			os.Exit(2)
		}
		return
	}
	key := os.Getenv("GEMINI_API_KEY")
	if key == "" {
		fmt.Fprintln(os.Stderr, "promptcheck: GEMINI_API_KEY is not set; it asks the real model, so it needs a key (the test suite checks the same against the fake)")
		os.Exit(2)
	}
	client, err := gemini.New(ctx, gemini.Options{APIKey: key, Model: *model, BaseURL: *base})
	if err != nil {
		fmt.Fprintln(os.Stderr, "promptcheck:", err)
		os.Exit(2)
	}
	s, err := check(ctx, client, *n, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "promptcheck:", err)
		os.Exit(2)
	}
	chat, err := checkChat(ctx, client, *chatN, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "promptcheck:", err)
		os.Exit(2)
	}
	if s.Rate() > *maxRate || chat.Rate() > *maxRate {
		fmt.Printf("FAIL: contamination rate %.1f%% (verdicts), %.1f%% (chat replies): above %.1f%%\n", 100*s.Rate(), 100*chat.Rate(), 100**maxRate)
		os.Exit(1)
	}
	fmt.Println("PASS: make deploy records its own check of this prompt against the deployment's model")
}

// runDeploy loads the operator's AWS configuration in the deployment's
// region and runs the gate.
func runDeploy(ctx context.Context, samPath, region string, o deployOptions, out io.Writer) error {
	sc, err := samconfig.Read(samPath)
	if err != nil {
		return err
	}
	var opts []func(*awsconfig.LoadOptions) error
	if region = or(region, sc.Region); region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsprofile.Load(ctx, opts...)
	if err != nil {
		return err
	}
	tmpl, err := sam.Load(filepath.Join(filepath.Dir(samPath), "template.yaml"))
	if err != nil {
		return err
	}
	return deployCheck(ctx, cfg, sc, tmpl, o, out)
}

// Generator is the model call (gemini.Client).
type Generator interface {
	Generate(ctx context.Context, r gemini.Request) (gemini.Reply, error)
}

// Summary is what one run found.
type Summary struct {
	Verdicts    int            // verdicts read
	Replaced    int            // that the filter would repair
	Quarantined int            // that the filter would stop
	Unreadable  int            // replies that were not a verdict of the tier
	Terms       map[string]int // entry id -> verdicts it appeared in
}

// Rate is the share of readable verdicts the filter had to touch.
func (s Summary) Rate() float64 {
	if s.Verdicts == 0 {
		return 0
	}
	return float64(s.Replaced+s.Quarantined) / float64(s.Verdicts)
}

// check asks for verdicts until n are read (an unreadable reply, which the
// generator would ask again for, is counted and another pair asked) or the
// submission and tier pairs run out, and filters each, reporting to out as
// it goes. A model error stops the run: a rate over fewer verdicts than
// asked would mislead.
func check(ctx context.Context, g Generator, n int, out io.Writer) (Summary, error) {
	filter, err := sosfilter.New()
	if err != nil {
		return Summary{}, err
	}
	if n < 1 || n > 3*len(submissions) {
		return Summary{}, fmt.Errorf("n must be between 1 and %d", 3*len(submissions))
	}
	s := Summary{Terms: map[string]int{}}
	fmt.Fprintf(out, "prompt %s, filter %s: %d verdicts\n", prompt.Version, filter.Version(), n)
	for i := 0; s.Verdicts < n && i < 3*len(submissions); i++ {
		q, tier := submissions[i%len(submissions)], oracle.Tiers()[i/len(submissions)]
		p, err := prompt.Build(tier, q)
		if err != nil {
			return s, err
		}
		reply, err := g.Generate(ctx, gemini.Request{System: p.System, User: p.User, Schema: prompt.Schema(tier), Seed: prompt.Seed})
		if err != nil {
			return s, fmt.Errorf("verdict %d (%s): %w", i+1, tier, err)
		}
		a, err := oracle.ParseAnalysis(tier, []byte(reply.Text))
		if err != nil {
			s.Unreadable++
			fmt.Fprintf(out, "%3d %-8s unreadable reply\n", i+1, tier)
			continue
		}
		s.Verdicts++
		_, rep := filter.Analysis(a)
		switch rep.Action {
		case sosfilter.Replace:
			s.Replaced++
		case sosfilter.Quarantine:
			s.Quarantined++
		}
		for _, t := range rep.Terms() {
			s.Terms[t]++
		}
		fmt.Fprintf(out, "%3d %-8s %-10s %s\n", i+1, tier, rep.Action, strings.Join(rep.Terms(), " "))
	}
	fmt.Fprintf(out, "contamination rate %.1f%% (%d replaced, %d quarantined of %d; %d unreadable)\n",
		100*s.Rate(), s.Replaced, s.Quarantined, s.Verdicts, s.Unreadable)
	ids := make([]string, 0, len(s.Terms))
	for id := range s.Terms {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(out, "  %-28s %d\n", id, s.Terms[id])
	}
	return s, nil
}

// submissions are realistic ideas of the kinds customers send; each is
// asked at every tier.
var submissions = []string{
	"Should I open a second bakery across town?",
	"I want to quit my job to sell handmade furniture online.",
	"Is a subscription box for dog treats a good business in Toronto?",
	"Should we move our two-person agency to a four-day week?",
	"I am thinking of launching a podcast about municipal politics.",
	"Would a mobile bike repair van work in a suburb?",
	"Should I go back to school for a nursing degree at 41?",
	"Is it smart to buy a food truck instead of leasing a restaurant?",
	"We want to turn our family cottage into a short-term rental.",
	"Should I build a budgeting app for freelancers?",
	"I plan to import Portuguese ceramics and sell them at markets.",
	"Should our bookstore add a café corner?",
	"Is tutoring high-school math online a viable side business?",
	"Should I sign a three-year lease for a yoga studio?",
	"I want to start a newsletter reviewing local restaurants.",
	"Should we hire our first salesperson before we have a product manager?",
	"Would a repair café for electronics pay for itself?",
	// Two that hold listed words, which the reply must refer to indirectly.
	"Should I name my design studio Anvil & Astra?",
	"Is Gamma a good tool for our investor slides, or should we stay with PowerPoint?",
}
