package prompt

import (
	"google.golang.org/genai"

	"42sisters.ai/oracle/shared/oracle"
)

// Schema returns the JSON response schema of a tier, or nil for an unknown
// tier. Quick has verdict and summary; full adds breakdown with exactly the
// five dimensions; strategy adds strategy with next_step, alternative and
// exactly three tests. Every property is required and PropertyOrdering makes
// the model write them in the order the customer reads them. Text lengths
// are not in the schema: oracle.ParseAnalysis enforces them after the reply.
// Each call returns a new value, so no caller can alter another's schema.
func Schema(tier oracle.Tier) *genai.Schema {
	if _, err := oracle.ParseTier(string(tier)); err != nil {
		return nil
	}
	top := object("The verdict on the submission.")
	top.add("verdict", enum("The overall verdict: GREEN proceed, AMBER proceed with caution, RED do not proceed, NULL insufficient signal.",
		oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull))
	top.add("summary", text("One or two direct sentences giving the main reason for the verdict."))
	if tier == oracle.TierQuick {
		return top.Schema
	}
	breakdown := object("The five dimensions of the verdict.")
	for _, name := range oracle.Dimensions {
		note := object(dimensionQuestions[name])
		note.add("verdict", enum("The verdict on this dimension: GREEN, AMBER or RED.",
			oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed))
		note.add("analysis", text("A short analysis of this dimension in plain English."))
		breakdown.add(name, note.Schema)
	}
	top.add("breakdown", breakdown.Schema)
	if tier == oracle.TierFull {
		return top.Schema
	}
	strategy := object("What to do next.")
	strategy.add("next_step", text("The single most valuable action to take next."))
	strategy.add("alternative", text("A fundamentally different path to the same goal."))
	strategy.add("tests", &genai.Schema{
		Type:        genai.TypeArray,
		Description: "Three cheap, concrete tests of whether the idea works.",
		Items:       text("One test: what to do and what result to look for."),
		MinItems:    genai.Ptr(int64(oracle.StrategyTests)),
		MaxItems:    genai.Ptr(int64(oracle.StrategyTests)),
	})
	top.add("strategy", strategy.Schema)
	return top.Schema
}

// objectSchema builds an object schema whose properties are all required and
// ordered as they are added.
type objectSchema struct{ *genai.Schema }

func object(description string) objectSchema {
	return objectSchema{&genai.Schema{Type: genai.TypeObject, Description: description, Properties: map[string]*genai.Schema{}}}
}

func (o objectSchema) add(name string, s *genai.Schema) {
	o.Properties[name] = s
	o.Required = append(o.Required, name)
	o.PropertyOrdering = append(o.PropertyOrdering, name)
}

func text(description string) *genai.Schema {
	return &genai.Schema{Type: genai.TypeString, Description: description}
}

func enum(description string, verdicts ...oracle.Verdict) *genai.Schema {
	values := make([]string, len(verdicts))
	for i, v := range verdicts {
		values[i] = string(v)
	}
	return &genai.Schema{Type: genai.TypeString, Format: "enum", Description: description, Enum: values}
}
