package letter

import (
	"fmt"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// Sample is one letter rendered from fixed content, named for what it shows
// ("quick/AMBER", "notice").
type Sample struct {
	Name string
	Message
}

// sampleURL is the result page link the samples carry (the session of the
// spec's examples).
const sampleURL = "https://42sisters.ai/oracle/result?session_id=cs_live_abc123"

// sampleSignInURL and sampleChatURL are the chat emails' links: a sign-in
// link with a token of the minted form, and the chat page.
const (
	sampleSignInURL = "https://42sisters.ai/chat/signin?token=q3Zx9vB0kLm4Rt7YwE2sN8aHc5Jd1Pf6Gu0Ii3Oo9Kl"
	sampleChatURL   = "https://42sisters.ai/chat"
)

// sampleQueries and sampleAnalyses are SPEC_ORACLE_VERDICT_PIPELINE Examples
// 1-3; Example 3 gives only the strategy, so its summary and breakdown are
// written in the same voice.
var sampleQueries = map[oracle.Tier]string{
	oracle.TierQuick:    "Should I quit my job to start this business?",
	oracle.TierFull:     "Launch a subscription newsletter about AI for executives",
	oracle.TierStrategy: "Acquire a failing restaurant and convert to ghost kitchen",
}

func sampleAnalysis(tier oracle.Tier, v oracle.Verdict) oracle.Analysis {
	switch tier {
	case oracle.TierQuick:
		return oracle.Analysis{Verdict: v, Summary: "The instinct is sound but the timing is missing — this needs a 6-month runway before you pull the trigger."}
	case oracle.TierFull:
		return oracle.Analysis{
			Verdict: v,
			Summary: "Demand is real, the channel is underserved, and the format fits the audience.",
			Breakdown: map[string]oracle.DimensionNote{
				"Stability":   {Verdict: oracle.VerdictGreen, Analysis: "Executive appetite for AI signal exists..."},
				"Turbulence":  {Verdict: oracle.VerdictAmber, Analysis: "Crowded with noise, differentiation required..."},
				"Change Rate": {Verdict: oracle.VerdictRed, Analysis: "AI news cycle is moving faster than weekly..."},
				"Completion":  {Verdict: oracle.VerdictAmber, Analysis: "Distribution strategy not specified..."},
				"Curvature":   {Verdict: oracle.VerdictGreen, Analysis: "Non-linear upside via enterprise licensing..."},
			},
		}
	}
	return oracle.Analysis{
		Verdict: v,
		Summary: "The demand case is plausible, but the deal only works if the lease and the unit economics do.",
		Breakdown: map[string]oracle.DimensionNote{
			"Stability":   {Verdict: oracle.VerdictAmber, Analysis: "Delivery demand is steady, but the restaurant's failure is unexplained."},
			"Turbulence":  {Verdict: oracle.VerdictRed, Analysis: "Delivery platforms change fees and rankings without notice."},
			"Change Rate": {Verdict: oracle.VerdictAmber, Analysis: "Conversion takes months while the lease keeps running."},
			"Completion":  {Verdict: oracle.VerdictAmber, Analysis: "No plan yet for kitchen staffing or menu testing."},
			"Curvature":   {Verdict: oracle.VerdictGreen, Analysis: "One kitchen can serve several virtual brands at once."},
		},
		Strategy: &oracle.Strategy{
			NextStep:    "Model the ghost kitchen unit economics at 60% occupancy before signing any lease.",
			Alternative: "License the brand to existing kitchens instead of acquiring real estate.",
			Tests: []string{
				"Run delivery-only menus from a shared kitchen for 90 days to validate demand.",
				"Survey 20 potential B2B clients for catering demand in the target area.",
				"Verify the failing restaurant's lease terms — assignment clauses are often blocking.",
			},
		},
	}
}

// Samples renders every letter with the default brand: each tier with each
// of the four verdicts, then the silent-drop notice, the order notices, the
// acknowledgement and the chat's emails. Tests that must see
// every customer-facing text (the content filter's) run over these.
func Samples() ([]Sample, error) {
	var out []Sample
	for _, tier := range oracle.Tiers() {
		for _, v := range []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull} {
			m, err := Verdict(DefaultBrand(), tier, sampleQueries[tier], sampleAnalysis(tier, v), sampleURL)
			if err != nil {
				return nil, fmt.Errorf("sample %s/%s: %w", tier, v, err)
			}
			out = append(out, Sample{Name: fmt.Sprintf("%s/%s", tier, v), Message: m})
		}
	}
	m, err := SilentDropNotice(DefaultBrand())
	if err != nil {
		return nil, fmt.Errorf("sample notice: %w", err)
	}
	out = append(out, Sample{Name: "notice", Message: m})
	for _, name := range Notices() {
		m, err := Notice(DefaultBrand(), name, sampleURL)
		if err != nil {
			return nil, fmt.Errorf("sample %s notice: %w", name, err)
		}
		out = append(out, Sample{Name: name, Message: m})
	}
	m, err = Autoresponse(DefaultBrand(), "Question about my verdict")
	if err != nil {
		return nil, fmt.Errorf("sample autoresponse: %w", err)
	}
	out = append(out, Sample{Name: "autoresponse", Message: m})
	if m, err = ChatSignIn(DefaultBrand(), sampleSignInURL, 15*time.Minute); err != nil {
		return nil, fmt.Errorf("sample sign-in email: %w", err)
	}
	out = append(out, Sample{Name: chatSignIn, Message: m})
	if m, err = ChatPaymentFailed(DefaultBrand(), sampleChatURL); err != nil {
		return nil, fmt.Errorf("sample failed renewal: %w", err)
	}
	out = append(out, Sample{Name: chatPaymentFailed, Message: m})
	return out, nil
}
