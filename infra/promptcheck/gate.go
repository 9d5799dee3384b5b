package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/putonce"
	"42sisters.ai/oracle/shared/sosfilter"
)

// minVerdicts is the size of the check VC-6 asks for: 50 verdicts.
const minVerdicts = 50

// checkPrefix is where the checks are kept in the deployment bucket.
const checkPrefix = "prompt-checks/"

// modelPrefix holds the checks of one stack's model. SAM's managed bucket
// is the account's and region's, shared by every stack there: a staging
// stack's check, against its model and its key, says nothing of
// production's, and a rate is compared only with the same model's.
func modelPrefix(stack, model string) string {
	return checkPrefix + stack + "/" + model + "/"
}

// checkKey names the check of a prompt: by its version, then its
// fingerprint, since an edit that forgot its new version is another prompt.
func checkKey(stack, model, version, fingerprint string) string {
	return modelPrefix(stack, model) + version + "/" + fingerprint + ".json"
}

// Check is one run of the contamination check against one of a
// deployment's models, and its judgement: which prompt it measured, what
// it found, and whether that prompt may be deployed.
type Check struct {
	Stack         string    `json:"stack"`
	Version       string    `json:"version"`     // prompt.Version
	Fingerprint   string    `json:"fingerprint"` // prompt.Fingerprint
	FilterVersion string    `json:"filter_version"`
	Model         string    `json:"model"`
	Verdicts      int       `json:"verdicts"`
	Replaced      int       `json:"replaced"`
	Quarantined   int       `json:"quarantined"`
	Unreadable    int       `json:"unreadable"`
	Rate          float64   `json:"rate"`
	MaxRate       float64   `json:"max_rate"`
	CheckedAt     time.Time `json:"checked_at"`
	// The chat's part, on the model the Sisters Chat calls (the primary
	// alone): prompt.ChatVersion and its replies. Empty on a fallback
	// model's check.
	ChatVersion     string  `json:"chat_version,omitempty"`
	ChatReplies     int     `json:"chat_replies,omitempty"`
	ChatReplaced    int     `json:"chat_replaced,omitempty"`
	ChatQuarantined int     `json:"chat_quarantined,omitempty"`
	ChatRate        float64 `json:"chat_rate,omitempty"`
	// Passed is the judgement, made once when the check ran: within its
	// limit and no worse than the prompt checked before it (Previous).
	Passed   bool   `json:"passed"`
	Refusal  string `json:"refusal,omitempty"`  // why it did not pass
	Previous string `json:"previous,omitempty"` // the key of the check it was compared with
}

// judge decides whether c passes: its rates within the limit and neither
// above the previous prompt's on the same model (VC-6: a change that
// raises the rate is rejected). previous is nil for the first prompt
// checked.
func (c *Check) judge(previous *Check, previousKey string) {
	c.Passed, c.Refusal, c.Previous = true, "", previousKey
	refuse := func(format string, args ...any) {
		if c.Passed {
			c.Passed, c.Refusal = false, fmt.Sprintf(format, args...)
		}
	}
	if c.Rate > c.MaxRate {
		refuse("a contamination rate of %.1f%% of the verdicts, above the limit of %.1f%%", 100*c.Rate, 100*c.MaxRate)
	}
	if c.ChatRate > c.MaxRate {
		refuse("a contamination rate of %.1f%% of the chat replies, above the limit of %.1f%%", 100*c.ChatRate, 100*c.MaxRate)
	}
	if previous != nil && c.Rate > previous.Rate {
		refuse("the verdicts' rate rose from %.1f%% (prompt %s) to %.1f%%", 100*previous.Rate, previous.Version, 100*c.Rate)
	}
	if previous != nil && previous.ChatReplies > 0 && c.ChatRate > previous.ChatRate {
		refuse("the chat replies' rate rose from %.1f%% (prompt %s) to %.1f%%", 100*previous.ChatRate, previous.Version, 100*c.ChatRate)
	}
}

// admits says whether a recorded check lets the current prompt be
// deployed on m: a check of exactly this prompt, stack and model, over
// enough verdicts (and chat replies, on the chat's model), that passed and
// whose rates are within today's limit too (a pass recorded under a looser
// one does not pass a stricter deploy).
func (c Check) admits(stack string, m model, fingerprint string, maxRate float64) error {
	switch {
	case c.Stack != stack || c.Model != m.Name:
		return fmt.Errorf("the record is of the stack %s's model %s, not %s's %s", c.Stack, c.Model, stack, m.Name)
	case c.Fingerprint != fingerprint || c.Version != prompt.Version:
		return fmt.Errorf("the record is of prompt %s (%s), not %s (%s)", c.Version, c.Fingerprint, prompt.Version, fingerprint)
	case c.Verdicts < minVerdicts:
		return fmt.Errorf("the check read %d verdicts, fewer than %d", c.Verdicts, minVerdicts)
	case m.Chat && c.ChatVersion != prompt.ChatVersion:
		return fmt.Errorf("the record is of chat prompt %q, not %s", c.ChatVersion, prompt.ChatVersion)
	case m.Chat && c.ChatReplies < minChatReplies:
		return fmt.Errorf("the check read %d chat replies, fewer than %d", c.ChatReplies, minChatReplies)
	case !c.Passed:
		return fmt.Errorf("prompt %s failed its contamination check on %s on %s: %s; write the prompt again under a new version",
			c.Version, c.Model, c.CheckedAt.Format(time.DateOnly), c.Refusal)
	case c.Rate > maxRate || c.ChatRate > maxRate:
		return fmt.Errorf("prompt %s passed its check on %s under a limit of %.1f%% (rates %.1f%% and %.1f%% of the chat replies), above today's %.1f%%",
			c.Version, c.Model, 100*c.MaxRate, 100*c.Rate, 100*c.ChatRate, 100*maxRate)
	}
	return nil
}

// Bucket is the S3 calls the gate makes (s3.Client).
type Bucket interface {
	putonce.Putter
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// model is one of a deployment's models, as the gate asks it.
type model struct {
	Name  string
	Model Generator
	// Chat: the Sisters Chat calls this model (the primary alone), so its
	// check makes the chat's exchanges too.
	Chat bool
}

// gate is make deploy's prompt gate (SPEC_ORACLE_SOS_FILTER VC-6, GAP-H):
// the current prompt is deployed only with a passing contamination check
// of its own on each model the deployment writes verdicts with (the
// primary, and the fallback when there is one), run with the deployment's
// key and kept, written once, in the deployment's bucket.
type gate struct {
	S3             Bucket
	Bucket         string
	Stack          string
	Models         []model // asked only when no check is recorded
	Verdicts, Chat int
	MaxRate        float64
	Now            func() time.Time
	Out            io.Writer
}

// errRefused marks a deploy the gate refuses.
var errRefused = errors.New("the deploy is refused")

// run admits the current prompt on every model or refuses it (errRefused).
func (g gate) run(ctx context.Context) error {
	fp, err := prompt.Fingerprint()
	if err != nil {
		return err
	}
	for _, m := range g.Models {
		if err := g.runOn(ctx, m, fp); err != nil {
			return err
		}
	}
	return nil
}

// runOn admits the current prompt on m or refuses it. A prompt with no
// check on m is checked now and its result recorded, pass or fail; a run
// that cannot finish (the model failed, too few readable verdicts) records
// nothing and refuses, so the next deploy tries again.
func (g gate) runOn(ctx context.Context, m model, fp string) error {
	key := checkKey(g.Stack, m.Name, prompt.Version, fp)
	where := "s3://" + g.Bucket + "/" + key
	c, found, err := g.read(ctx, key)
	if err != nil {
		return err
	}
	if found {
		fmt.Fprintf(g.Out, "prompt %s on %s: its contamination check is recorded in %s (%s)\n", prompt.Version, m.Name, where, c.CheckedAt.Format(time.RFC3339))
	} else {
		chat := 0
		if m.Chat {
			chat = g.Chat
		}
		fmt.Fprintf(g.Out, "prompt %s has no contamination check on %s in %s: asking it for %d verdicts and %d chat replies\n",
			prompt.Version, m.Name, where, g.Verdicts, chat)
		if c, err = g.measure(ctx, m, fp); err != nil {
			return fmt.Errorf("%w: the contamination check on %s did not finish, and nothing was recorded: %w", errRefused, m.Name, err)
		}
		body, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return err
		}
		written, err := putonce.Put(ctx, g.S3, key, append(body, '\n'), &s3.PutObjectInput{Bucket: aws.String(g.Bucket), ContentType: aws.String("application/json")})
		if err != nil {
			return fmt.Errorf("%w: the check ran but could not be recorded in %s: %w", errRefused, where, err)
		}
		if !written {
			// Another deploy recorded its check meanwhile: the first stands.
			if c, _, err = g.read(ctx, key); err != nil {
				return err
			}
		}
		fmt.Fprintf(g.Out, "recorded in %s\n", where)
	}
	if err := c.admits(g.Stack, m, fp, g.MaxRate); err != nil {
		return fmt.Errorf("%w: %s: %w", errRefused, where, err)
	}
	fmt.Fprintf(g.Out, "prompt %s passed its contamination check on %s: %.1f%% of %d verdicts", prompt.Version, m.Name, 100*c.Rate, c.Verdicts)
	if m.Chat {
		fmt.Fprintf(g.Out, ", %.1f%% of %d chat replies", 100*c.ChatRate, c.ChatReplies)
	}
	fmt.Fprintln(g.Out)
	return nil
}

// measure runs the check of the current prompt on m and judges it against
// the newest check of another prompt on m that passed.
func (g gate) measure(ctx context.Context, m model, fingerprint string) (Check, error) {
	s, err := check(ctx, m.Model, g.Verdicts, g.Out)
	if err != nil {
		return Check{}, err
	}
	if s.Verdicts < minVerdicts {
		return Check{}, fmt.Errorf("%d readable verdicts, fewer than %d", s.Verdicts, minVerdicts)
	}
	filter, err := sosfilter.New()
	if err != nil {
		return Check{}, err
	}
	c := Check{Stack: g.Stack, Version: prompt.Version, Fingerprint: fingerprint, FilterVersion: filter.Version(), Model: m.Name,
		Verdicts: s.Verdicts, Replaced: s.Replaced, Quarantined: s.Quarantined, Unreadable: s.Unreadable,
		Rate: s.Rate(), MaxRate: g.MaxRate, CheckedAt: g.Now().UTC()}
	if m.Chat {
		chat, err := checkChat(ctx, m.Model, g.Chat, g.Out)
		if err != nil {
			return Check{}, err
		}
		if chat.Replies < minChatReplies {
			return Check{}, fmt.Errorf("%d chat replies, fewer than %d", chat.Replies, minChatReplies)
		}
		c.ChatVersion, c.ChatReplies, c.ChatReplaced, c.ChatQuarantined, c.ChatRate = prompt.ChatVersion, chat.Replies, chat.Replaced, chat.Quarantined, chat.Rate()
	}
	previous, previousKey, err := g.previous(ctx, m.Name, fingerprint)
	if err != nil {
		return Check{}, err
	}
	c.judge(previous, previousKey)
	return c, nil
}

// previous is the newest recorded check of another prompt on the same
// stack's same model that passed: the prompt this one replaces.
func (g gate) previous(ctx context.Context, modelName, fingerprint string) (*Check, string, error) {
	var (
		newest    *Check
		newestKey string
	)
	prefix := modelPrefix(g.Stack, modelName)
	p := s3.NewListObjectsV2Paginator(g.S3, &s3.ListObjectsV2Input{Bucket: aws.String(g.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("list the recorded checks in s3://%s/%s: %w", g.Bucket, prefix, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			c, found, err := g.read(ctx, key)
			if err != nil {
				return nil, "", err
			}
			if found && c.Passed && c.Fingerprint != fingerprint && (newest == nil || c.CheckedAt.After(newest.CheckedAt)) {
				newest, newestKey = &c, key
			}
		}
	}
	return newest, newestKey, nil
}

// maxRecord bounds what is read of one record: a check is under a kilobyte.
const maxRecord = 64 << 10

// read reads the check recorded under key; found is false when none is.
func (g gate) read(ctx context.Context, key string) (c Check, found bool, err error) {
	out, err := g.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(g.Bucket), Key: aws.String(key)})
	var missing *s3types.NoSuchKey
	if errors.As(err, &missing) {
		return Check{}, false, nil
	}
	if err != nil {
		return Check{}, false, fmt.Errorf("read s3://%s/%s: %w", g.Bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxRecord))
	if err != nil {
		return Check{}, false, fmt.Errorf("read s3://%s/%s: %w", g.Bucket, key, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Check{}, false, fmt.Errorf("s3://%s/%s is not a contamination check: %w", g.Bucket, key, err)
	}
	return c, true, nil
}
