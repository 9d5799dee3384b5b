package oracle

// Divergence levels of a regenerated verdict against the first one
// (SPEC_ORACLE_REGEN_CONSISTENCY invariant 5).
const (
	DivergenceNone        = "none"        // the same label
	DivergenceMinor       = "minor"       // an adjacent colour: GREEN↔AMBER, AMBER↔RED; logged only
	DivergenceSignificant = "significant" // GREEN↔RED or anything↔NULL: the customer is told
	// DivergenceUnknown: the first label could not be recovered, so the
	// check was skipped; the spec has the customer told, as for significant.
	DivergenceUnknown = "unknown"
)

// colourRank places the colours on one scale; NULL is off it.
var colourRank = map[Verdict]int{VerdictGreen: 0, VerdictAmber: 1, VerdictRed: 2}

// Diverge compares a regenerated verdict's label with the original's.
func Diverge(original, regenerated Verdict) string {
	if _, err := ParseVerdict(string(original)); err != nil {
		return DivergenceUnknown
	}
	if original == regenerated {
		return DivergenceNone
	}
	a, okA := colourRank[original]
	b, okB := colourRank[regenerated]
	if okA && okB && (a-b == 1 || b-a == 1) {
		return DivergenceMinor
	}
	return DivergenceSignificant
}

// NotifyDivergence reports whether a divergence level owes the customer the notice.
func NotifyDivergence(level string) bool {
	return level == DivergenceSignificant || level == DivergenceUnknown
}

// Original is what is kept of a session's first (emailed) verdict after its
// order expires: its label and keyed hash, for the divergence check.
type Original struct {
	Verdict Verdict
	Hash    string
}

// RegenExpired is the reason of every regeneration: the stored verdict
// expired (the spec's cache miss), whether its order is still there or was
// deleted and claimed again.
const RegenExpired = "expired"
