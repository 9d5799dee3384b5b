package prompt

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"google.golang.org/genai"

	"42sisters.ai/oracle/shared/oracle"
)

// conforms checks a decoded JSON value against a schema the way Gemini's
// structured output reads it: every required property present, no property
// the schema does not name, strings within their enum, arrays within their
// item counts.
func conforms(s *genai.Schema, v any, path string) error {
	switch s.Type {
	case genai.TypeObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %T", path, v)
		}
		for _, name := range s.Required {
			if _, ok := obj[name]; !ok {
				return fmt.Errorf("%s: required property %q missing", path, name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(obj)) {
			prop, ok := s.Properties[name]
			if !ok {
				return fmt.Errorf("%s: property %q not in the schema", path, name)
			}
			if err := conforms(prop, obj[name], path+"."+name); err != nil {
				return err
			}
		}
	case genai.TypeArray:
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %T", path, v)
		}
		if s.MinItems != nil && int64(len(list)) < *s.MinItems || s.MaxItems != nil && int64(len(list)) > *s.MaxItems {
			return fmt.Errorf("%s: %d items out of bounds", path, len(list))
		}
		for i, item := range list {
			if err := conforms(s.Items, item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case genai.TypeString:
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string, got %T", path, v)
		}
		if s.Enum != nil && !slices.Contains(s.Enum, str) {
			return fmt.Errorf("%s: %q not in %v", path, str, s.Enum)
		}
	default:
		return fmt.Errorf("%s: schema type %q not handled", path, s.Type)
	}
	return nil
}

// sample is a valid analysis of a tier.
func sample(tier oracle.Tier) oracle.Analysis {
	a := oracle.Analysis{Verdict: oracle.VerdictNull, Summary: "There is not enough here to judge: say who would buy it."}
	if tier == oracle.TierQuick {
		return a
	}
	a.Breakdown = map[string]oracle.DimensionNote{}
	for i, name := range oracle.Dimensions {
		verdict := []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed}[i%3]
		a.Breakdown[name] = oracle.DimensionNote{Verdict: verdict, Analysis: "What the submission says about " + name + "."}
	}
	if tier == oracle.TierFull {
		return a
	}
	a.Strategy = &oracle.Strategy{
		NextStep:    "Ask ten likely buyers what they pay today.",
		Alternative: "Sell the method as a course instead.",
		Tests:       []string{"A landing page.", "Three pre-sales.", "One pilot customer."},
	}
	return a
}

// wire is how the schema travels to the API and an analysis travels back:
// as JSON.
func wire(t *testing.T, tier oracle.Tier, a oracle.Analysis) (*genai.Schema, any) {
	t.Helper()
	raw, err := json.Marshal(Schema(tier))
	if err != nil {
		t.Fatal(err)
	}
	var schema genai.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	doc, err := a.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var value any
	if err := json.Unmarshal(doc, &value); err != nil {
		t.Fatal(err)
	}
	return &schema, value
}

func TestSampleOfEachTierSatisfiesOnlyItsSchema(t *testing.T) {
	for _, sampleTier := range oracle.Tiers() {
		a := sample(sampleTier)
		if err := a.Validate(sampleTier); err != nil {
			t.Fatalf("sample %s is not valid: %v", sampleTier, err)
		}
		for _, schemaTier := range oracle.Tiers() {
			schema, value := wire(t, schemaTier, a)
			err := conforms(schema, value, "reply")
			if schemaTier == sampleTier && err != nil {
				t.Errorf("%s sample does not satisfy its schema: %v", sampleTier, err)
			}
			if schemaTier != sampleTier && err == nil {
				t.Errorf("%s sample satisfies the %s schema", sampleTier, schemaTier)
			}
		}
	}
}

func TestSchemaRefusesWhatParseAnalysisRefuses(t *testing.T) {
	nullDimension := sample(oracle.TierFull)
	nullDimension.Breakdown["Curvature"] = oracle.DimensionNote{Verdict: oracle.VerdictNull, Analysis: "x"}
	twoTests := sample(oracle.TierStrategy)
	twoTests.Strategy.Tests = twoTests.Strategy.Tests[:2]
	missingDimension := sample(oracle.TierFull)
	delete(missingDimension.Breakdown, "Completion")
	lowerVerdict := sample(oracle.TierQuick)
	lowerVerdict.Verdict = "green"
	cases := map[string]struct {
		tier oracle.Tier
		a    oracle.Analysis
	}{
		"NULL on a dimension": {oracle.TierFull, nullDimension},
		"two tests":           {oracle.TierStrategy, twoTests},
		"missing dimension":   {oracle.TierFull, missingDimension},
		"lower-case verdict":  {oracle.TierQuick, lowerVerdict},
	}
	for name, c := range cases {
		schema, value := wire(t, c.tier, c.a)
		if err := conforms(schema, value, "reply"); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
		if err := c.a.Validate(c.tier); err == nil {
			t.Errorf("%s: Validate accepts it", name)
		}
	}
}

func TestSchemaFieldsPerTier(t *testing.T) {
	top := map[oracle.Tier][]string{
		oracle.TierQuick:    {"verdict", "summary"},
		oracle.TierFull:     {"verdict", "summary", "breakdown"},
		oracle.TierStrategy: {"verdict", "summary", "breakdown", "strategy"},
	}
	for _, tier := range oracle.Tiers() {
		s := Schema(tier)
		checkObject(t, string(tier), s, top[tier])
		checkEnum(t, string(tier)+".verdict", s.Properties["verdict"], "GREEN", "AMBER", "RED", "NULL")
		checkString(t, string(tier)+".summary", s.Properties["summary"])
		if tier == oracle.TierQuick {
			continue
		}
		breakdown := s.Properties["breakdown"]
		checkObject(t, string(tier)+".breakdown", breakdown, oracle.Dimensions)
		for _, name := range oracle.Dimensions {
			note := breakdown.Properties[name]
			checkObject(t, string(tier)+".breakdown."+name, note, []string{"verdict", "analysis"})
			checkEnum(t, string(tier)+".breakdown."+name+".verdict", note.Properties["verdict"], "GREEN", "AMBER", "RED")
			checkString(t, string(tier)+".breakdown."+name+".analysis", note.Properties["analysis"])
		}
		if tier == oracle.TierFull {
			continue
		}
		strategy := s.Properties["strategy"]
		checkObject(t, "strategy.strategy", strategy, []string{"next_step", "alternative", "tests"})
		checkString(t, "strategy.strategy.next_step", strategy.Properties["next_step"])
		checkString(t, "strategy.strategy.alternative", strategy.Properties["alternative"])
		tests := strategy.Properties["tests"]
		if tests.Type != genai.TypeArray || tests.MinItems == nil || *tests.MinItems != 3 || tests.MaxItems == nil || *tests.MaxItems != 3 {
			t.Errorf("strategy.tests is not an array of exactly 3: %+v", tests)
		}
		checkString(t, "strategy.strategy.tests[]", tests.Items)
	}
}

func TestSchemaOfAnUnknownTierIsNil(t *testing.T) {
	for _, tier := range []oracle.Tier{"", "premium", "FULL"} {
		if s := Schema(tier); s != nil {
			t.Errorf("Schema(%q) = %+v, want nil", tier, s)
		}
	}
}

func TestSchemaIsNewOnEachCall(t *testing.T) {
	a := Schema(oracle.TierStrategy)
	a.Properties["verdict"].Enum[0] = "PURPLE"
	a.Required = nil
	b := Schema(oracle.TierStrategy)
	if b.Properties["verdict"].Enum[0] != "GREEN" || len(b.Required) != 4 {
		t.Fatal("a change to one schema reached the next")
	}
}

// checkObject asserts an object schema whose properties are exactly names,
// all required and written in that order.
func checkObject(t *testing.T, path string, s *genai.Schema, names []string) {
	t.Helper()
	if s == nil || s.Type != genai.TypeObject {
		t.Fatalf("%s: not an object schema: %+v", path, s)
	}
	if got := slices.Sorted(maps.Keys(s.Properties)); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
		t.Errorf("%s: properties %v, want %v", path, got, names)
	}
	if !slices.Equal(s.Required, names) {
		t.Errorf("%s: required %v, want %v", path, s.Required, names)
	}
	if !slices.Equal(s.PropertyOrdering, names) {
		t.Errorf("%s: property ordering %v, want %v", path, s.PropertyOrdering, names)
	}
}

func checkEnum(t *testing.T, path string, s *genai.Schema, values ...string) {
	t.Helper()
	if s == nil || s.Type != genai.TypeString || s.Format != "enum" || !slices.Equal(s.Enum, values) {
		t.Errorf("%s: want a string enum of %v, got %+v", path, values, s)
	}
}

func checkString(t *testing.T, path string, s *genai.Schema) {
	t.Helper()
	if s == nil || s.Type != genai.TypeString || s.Enum != nil || s.Description == "" {
		t.Errorf("%s: want a described free string, got %+v", path, s)
	}
}
