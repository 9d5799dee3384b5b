package prompt

// Settings: the generation settings every verdict is generated with, first
// generation and regeneration alike. They are the determinism settings of
// SPEC_ORACLE_REGEN_CONSISTENCY ("Regen configuration lock"): temperature 0
// and top-k 1 make decoding greedy, and one candidate with a fixed seed
// leaves nothing to chance on our side. Identical output is still not
// guaranteed (serving replicas vary, REGEN-GAP-06), which is why the first
// verdict is stored and is the one that counts. Changing any of them needs a
// new Version.
const (
	Temperature    float32 = 0
	TopP           float32 = 1
	TopK           float32 = 1
	CandidateCount int32   = 1
	// Seed is fixed rather than drawn per call; its value is the date of the
	// first Version and has no other meaning.
	Seed             int32 = 20261121
	ResponseMIMEType       = "application/json"
)
