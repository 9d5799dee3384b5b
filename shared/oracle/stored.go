package oracle

// VerdictProblem says what is wrong with o's stored verdict, "" when
// nothing: it must parse as its tier's verdict and match the keyed hash
// stored beside it (hash computes that hash). Every reader of a stored
// verdict asks it before serving, mailing or showing one
// (SPEC_ORACLE_CACHE_ALERT invariant 7), and so does the health job's
// sample.
func VerdictProblem(o Order, hash func(string) string) string {
	if o.Verdict == "" {
		return "is missing"
	}
	if _, err := ParseAnalysis(o.Tier, []byte(o.Verdict)); err != nil {
		return "no longer parses"
	}
	if o.VerdictHash != "" && hash(o.Verdict) != o.VerdictHash {
		return "no longer matches its hash"
	}
	return ""
}

// RegenCorrupt is the reason of a regeneration whose first verdict was
// set aside because it could no longer be read (SPEC_ORACLE_CACHE_ALERT
// failure mode 4), beside RegenExpired.
const RegenCorrupt = "corrupt"

// HoldVerdictCorrupt is why an order whose stored verdict was found
// corrupt is HELD instead of generated again: it was set aside once
// before (the write path is suspect), or it lacks what a generation needs.
const HoldVerdictCorrupt = "verdict_corrupt"

// BeingRepaired reports whether the order waits for the generation that
// replaces a verdict set aside as corrupt.
func (o Order) BeingRepaired() bool {
	return o.SetAsideAt != nil && (o.Status == StatusPaid || o.Status == StatusGenerating)
}
