package prompt

import "testing"

func TestSettingsAreTheDeterminismSettings(t *testing.T) {
	// SPEC_ORACLE_REGEN_CONSISTENCY invariant 1 and VC-1: greedy decoding,
	// one candidate, JSON out. The request body itself is shared/gemini's to
	// test; these are the values it must send.
	if Temperature != 0 || TopP != 1 || TopK != 1 || CandidateCount != 1 {
		t.Fatalf("temperature %v, topP %v, topK %v, candidates %d", Temperature, TopP, TopK, CandidateCount)
	}
	if ResponseMIMEType != "application/json" {
		t.Fatalf("response MIME type %q", ResponseMIMEType)
	}
	if Seed == 0 {
		// Gemini treats an unset seed as "pick one at random".
		t.Fatal("the seed must be set")
	}
}
