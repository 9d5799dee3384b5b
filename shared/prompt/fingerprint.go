package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"42sisters.ai/oracle/shared/oracle"
)

// fingerprintQuery is a submission that holds a listed word, so that the
// fingerprint covers the line that names such words too.
const fingerprintQuery = "Should I call my firm CSDM?"

// Fingerprint is a digest of everything this Version sends the model, for
// every tier: the instructions, the framing of the submission (with and
// without a line of listed words), the settings and the response schema,
// and the corrections a retry adds;
// and everything ChatVersion sends it, for every chat pass (the merge also
// written again), with its settings. A
// recorded contamination check names the Fingerprint it measured
// (SPEC_ORACLE_SOS_FILTER VC-6, GAP-H), so a prompt that changed since is
// told apart even under the same Version.
func Fingerprint() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "version %s\nsettings %v %v %v %d %d %s\n", Version, Temperature, TopP, TopK, CandidateCount, Seed, ResponseMIMEType)
	for _, tier := range oracle.Tiers() {
		for _, q := range []string{"Should I open a bakery?", fingerprintQuery} {
			p, err := Build(tier, q)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", tier, p.System, p.User)
		}
		schema, err := json.Marshal(Schema(tier))
		if err != nil {
			return "", err
		}
		h.Write(schema)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", Unpublishable([]string{"Gamma", "E8"}), Unpublishable(nil),
		Contradiction(oracle.VerdictGreen, oracle.VerdictRed, oracle.Dimensions[:3], len(oracle.Dimensions)))
	fmt.Fprintf(h, "chat %s\nsettings %v %v %d %s %d %d %d %d\n", ChatVersion, ChatTemperature, ChatTopP, ChatThinkingBudget,
		ChatResponseMIMEType, ChatSeed, ChatSeedAgain, ChatStanceTokens, ChatReplyTokens)
	history := []ChatTurn{{FromPerson: true, Text: "I want to open a bakery."}, {Text: "What draws you to it?"}}
	for _, msg := range []string{"Should I open a bakery?", fingerprintQuery} {
		for _, pass := range ChatPasses() {
			for _, again := range []bool{false, true} {
				p, err := Chat(pass, ChatInput{History: history, Message: msg, Built: "for", Tested: "against", Again: again})
				if err != nil {
					return "", err
				}
				fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%d\x00", pass, p.System, p.User, p.Seed, p.MaxTokens)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}
