package oracle

// Dimensions are the five breakdown dimensions of the Full Breakdown and
// Strategy Session tiers, in the order the customer reads them.
var Dimensions = []string{"Stability", "Turbulence", "Change Rate", "Completion", "Curvature"}

// Analysis is a verdict as the model returns it and as it is stored and
// delivered: quick has Verdict and Summary; full adds Breakdown; strategy
// adds Strategy (SPEC_ORACLE_VERDICT_PIPELINE "Outputs 1").
type Analysis struct {
	Verdict   Verdict                  `json:"verdict"`
	Summary   string                   `json:"summary"`
	Breakdown map[string]DimensionNote `json:"breakdown,omitempty"`
	Strategy  *Strategy                `json:"strategy,omitempty"`
}

// DimensionNote is one dimension of the breakdown. Its verdict is GREEN,
// AMBER or RED: NULL applies to the whole verdict only.
type DimensionNote struct {
	Verdict  Verdict `json:"verdict"`
	Analysis string  `json:"analysis"`
}

// Strategy is the Strategy Session's recommendations: exactly three tests.
type Strategy struct {
	NextStep    string   `json:"next_step"`
	Alternative string   `json:"alternative"`
	Tests       []string `json:"tests"`
}
