package main

import (
	"fmt"

	"42sisters.ai/oracle/shared/oracle"
)

// obj is a JSON object of a document built here: encoding/json writes its
// keys sorted, so a document is the same bytes on every cold start.
type obj = map[string]any

// The JSON Schemas below are written from shared/oracle's rules, never
// beside them: every bound is the constant ParseAnalysis and ValidateQuery
// enforce, so a schema cannot promise what the code refuses.

// forbiddenControls are the control characters (unicode.IsControl: C0 and
// C1) that oracle's checkText refuses in a verdict's text: every one but
// tab and newline.
const forbiddenControls = `\x00-\x08\x0B-\x1F\x7F-\x9F`

// spaces are the characters strings.TrimSpace removes beyond ASCII's and
// the controls (unicode.IsSpace): written as the characters themselves, the
// one form both Go's and ECMA-262's regular expressions read alike.
const spaces = "\u00A0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A\u2028\u2029\u202F\u205F\u3000"

// textPattern is a verdict text as checkText takes it: no control
// character but tab and newline, and at least one character that is
// neither a space nor a control (not empty once trimmed).
var textPattern = fmt.Sprintf(`^[^%[1]s]*[^\x00-\x20\x7F-\x9F%[2]s][^%[1]s]*$`, forbiddenControls, spaces)

// text is the schema of one verdict text of at most max characters (JSON
// Schema's maxLength counts code points, as checkText does).
func text(max int, description string) obj {
	return obj{"type": "string", "minLength": 1, "maxLength": max, "pattern": textPattern, "description": description}
}

// verdictSchema is the JSON Schema of a tier's verdict as the generator
// stores it and every answer carries it (oracle.Analysis, checked by
// ParseAnalysis): quick has verdict and summary; full adds the breakdown
// of exactly the five dimensions; strategy adds the strategy. No other
// member is allowed, at any level.
func verdictSchema(tier oracle.Tier) obj {
	props := obj{
		"verdict": obj{"type": "string", "enum": []string{string(oracle.VerdictGreen), string(oracle.VerdictAmber), string(oracle.VerdictRed), string(oracle.VerdictNull)},
			"description": "GREEN, AMBER or RED; NULL when the question cannot be read as one with an answer."},
		"summary": text(oracle.MaxSummaryChars, "The verdict in a few sentences."),
	}
	required := []string{"verdict", "summary"}
	if tier != oracle.TierQuick {
		dims := obj{}
		for _, d := range oracle.Dimensions {
			dims[d] = obj{
				"type":                 "object",
				"required":             []string{"verdict", "analysis"},
				"additionalProperties": false,
				"properties": obj{
					"verdict":  obj{"type": "string", "enum": []string{string(oracle.VerdictGreen), string(oracle.VerdictAmber), string(oracle.VerdictRed)}},
					"analysis": text(oracle.MaxAnalysisChars, "The dimension's analysis."),
				},
			}
		}
		props["breakdown"] = obj{"type": "object", "required": oracle.Dimensions, "additionalProperties": false, "properties": dims,
			"description": "The five dimensions, each GREEN, AMBER or RED."}
		required = append(required, "breakdown")
	}
	if tier == oracle.TierStrategy {
		props["strategy"] = obj{
			"type":                 "object",
			"required":             []string{"next_step", "alternative", "tests"},
			"additionalProperties": false,
			"properties": obj{
				"next_step":   text(oracle.MaxStrategyChars, "The next step to take."),
				"alternative": text(oracle.MaxStrategyChars, "The alternative worth weighing."),
				"tests": obj{"type": "array", "minItems": oracle.StrategyTests, "maxItems": oracle.StrategyTests,
					"items": text(oracle.MaxStrategyChars, "A test to run."), "description": "Exactly three tests."},
			},
		}
		required = append(required, "strategy")
	}
	return obj{
		"title":                fmt.Sprintf("The %s verdict", tier.Name()),
		"type":                 "object",
		"required":             required,
		"additionalProperties": false,
		"properties":           props,
	}
}

// querySchema is the query as ValidateQuery takes it. Its limit is
// oracle.MaxQueryUnits UTF-16 code units, which JSON Schema cannot count:
// maxLength (code points) holds every query taken and the description
// says the rest; a blank query passes the schema and is refused with 400.
func querySchema() obj {
	return obj{
		"type":      "string",
		"minLength": 1,
		"maxLength": oracle.MaxQueryUnits,
		"description": fmt.Sprintf("Your idea or question, in your words: at most %d UTF-16 code units "+
			"(a character outside the Basic Multilingual Plane counts two), not blank, no NUL character.", oracle.MaxQueryUnits),
		"examples": []string{"Should I open a bakery?"},
	}
}

// paidBodySchema is the body of a paid route: {"query": "..."}.
func paidBodySchema() obj {
	return obj{"type": "object", "required": []string{"query"}, "properties": obj{"query": querySchema()}}
}
