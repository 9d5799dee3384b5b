package fakegemini

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/oracle"
)

// picker makes a fixed sequence of choices from a prompt's hash, so that the
// same prompt always gets the same verdict and sentences.
type picker struct {
	seed [sha256.Size]byte
	n    uint32
}

// intn returns the next choice in [0, n).
func (p *picker) intn(n int) int {
	h := sha256.Sum256(binary.BigEndian.AppendUint32(p.seed[:], p.n))
	p.n++
	return int(binary.BigEndian.Uint64(h[:8]) % uint64(n))
}

// one picks one of options.
func one[T any](p *picker, options []T) T {
	return options[p.intn(len(options))]
}

// verdicts are the top verdicts in the order the hash picks them.
var verdicts = []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull}

// Verdict is the verdict document the fake model writes, unspoilt, for a
// prompt and tier: the same prompt always gets the same one. The content
// filter's false-positive corpus reads a thousand of them.
func Verdict(prompt string, tier oracle.Tier) oracle.Analysis {
	return document(&picker{seed: sha256.Sum256([]byte(prompt))}, tier, Scenario{})
}

// verdictText is the model's answer for a prompt hash, tier and scenario:
// the verdict document as JSON, or as the scenario spoils it.
func verdictText(prompt [sha256.Size]byte, tier oracle.Tier, sc Scenario) string {
	doc := document(&picker{seed: prompt}, tier, sc)
	b, err := json.Marshal(doc)
	if err != nil {
		// An Analysis holds only strings, so this cannot happen.
		return ""
	}
	text := string(b)
	switch {
	case sc.Incomplete:
		var fields map[string]json.RawMessage
		if json.Unmarshal(b, &fields) == nil {
			delete(fields, "summary")
			if b, err := json.Marshal(fields); err == nil {
				return string(b)
			}
		}
		return text
	case sc.Fenced:
		return "```json\n" + text + "\n```"
	case sc.Malformed:
		return cutInHalf(text)
	}
	return text
}

// cutInHalf returns the first half of s, cut on a character boundary.
func cutInHalf(s string) string {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// document builds the verdict document for a tier: verdict and summary;
// the full tier adds the breakdown; the strategy tier adds the strategy.
func document(p *picker, tier oracle.Tier, sc Scenario) oracle.Analysis {
	v := one(p, verdicts)
	if sc.Verdict != "" {
		v = sc.Verdict
	}
	leak := leakSentence(sc.LeakTerms)
	doc := oracle.Analysis{Verdict: v, Summary: one(p, summaries[v]) + leak}
	if tier == oracle.TierQuick {
		return doc
	}
	doc.Breakdown = make(map[string]oracle.DimensionNote, len(oracle.Dimensions))
	for i, dv := range dimensionVerdicts(p, v, sc.Inconsistent) {
		dim := oracle.Dimensions[i]
		text := one(p, dimensionTexts[dim][dv])
		if v == oracle.VerdictNull {
			text = nullDimensionTexts[dim]
		}
		doc.Breakdown[dim] = oracle.DimensionNote{Verdict: dv, Analysis: text + leak}
	}
	if tier != oracle.TierStrategy {
		return doc
	}
	tests := make([]string, 0, 3)
	for _, i := range permutation(p, len(strategyTests))[:3] {
		tests = append(tests, strategyTests[i]+leak)
	}
	doc.Strategy = &oracle.Strategy{
		NextStep:    one(p, nextSteps[v]) + leak,
		Alternative: one(p, alternatives[v]) + leak,
		Tests:       tests,
	}
	return doc
}

// leakSentence is the sentence that carries a scenario's leak terms.
func leakSentence(terms []string) string {
	if len(terms) == 0 {
		return ""
	}
	return " This reading draws on " + strings.Join(terms, ", ") + "."
}

// dimensionVerdicts gives the five dimensions verdicts that agree with the
// top verdict v: most of them share it and the rest sit next to it. Under
// NULL, Completion is RED (the idea lacks the detail to judge) and the rest
// AMBER. Inconsistent gives all five the verdict that contradicts v most.
func dimensionVerdicts(p *picker, v oracle.Verdict, inconsistent bool) []oracle.Verdict {
	out := make([]oracle.Verdict, len(oracle.Dimensions))
	if inconsistent {
		opposite := oracle.VerdictGreen
		if v == oracle.VerdictGreen {
			opposite = oracle.VerdictRed
		}
		for i := range out {
			out[i] = opposite
		}
		return out
	}
	if v == oracle.VerdictNull {
		for i, dim := range oracle.Dimensions {
			out[i] = oracle.VerdictAmber
			if dim == "Completion" {
				out[i] = oracle.VerdictRed
			}
		}
		return out
	}
	agree := 3 + p.intn(3) // a majority: three, four or five
	for n, i := range permutation(p, len(out)) {
		switch {
		case n < agree:
			out[i] = v
		case v == oracle.VerdictAmber:
			out[i] = one(p, []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictRed})
		default:
			out[i] = oracle.VerdictAmber
		}
	}
	return out
}

// permutation returns 0..n-1 shuffled by p.
func permutation(p *picker, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := p.intn(i + 1)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

var summaries = map[oracle.Verdict][]string{
	oracle.VerdictGreen: {
		"The idea is sound and worth pursuing: the need is real and the plan fits the people it is meant for.",
		"This looks promising: the basics are in place and the main risks can be managed with care.",
		"Go ahead: the idea is clear, the demand seems real and the first steps are within reach.",
	},
	oracle.VerdictAmber: {
		"The idea has promise, but a few important questions need answers before you commit money or time.",
		"Proceed with caution: parts of the plan are solid, while others rest on guesses you should test first.",
		"There is something here, but the plan needs more work on cost and demand before it is ready.",
	},
	oracle.VerdictRed: {
		"As described, this is unlikely to work: the costs and risks outweigh what it can realistically earn.",
		"Hold off: the plan depends on several things going right at once, and most of them are outside your control.",
		"This needs a rethink: the main assumption about who will pay for it does not hold up.",
	},
	oracle.VerdictNull: {
		"There is not enough detail here to give a fair verdict; say who it is for, what it costs and how you would start.",
		"The question is too open to judge: describe the idea, the people it serves and what success would look like.",
	},
}

// dimensionTexts are the analyses of each dimension for each of its verdicts.
var dimensionTexts = map[string]map[oracle.Verdict][]string{
	"Stability": {
		oracle.VerdictGreen: {
			"The foundation is solid: the skills, money and demand it needs are already within reach.",
			"It rests on steady ground, with a clear need and a simple way to meet it.",
		},
		oracle.VerdictAmber: {
			"The foundation is partly in place, but it leans on one or two things that are not yet certain.",
			"Some of the ground is firm, though the money side needs a closer look before you build on it.",
		},
		oracle.VerdictRed: {
			"The foundation is weak: it depends on money, skills or customers that are not there yet.",
			"There is little to stand on yet, and a single setback could bring the whole plan down.",
		},
	},
	"Turbulence": {
		oracle.VerdictGreen: {
			"Few outside shocks are likely to knock it off course, and the competition looks manageable.",
			"The surroundings are calm: demand is steady and rivals are unlikely to crowd you out.",
		},
		oracle.VerdictAmber: {
			"Expect some bumps: prices, rivals or the seasons could shake things, so keep some money in reserve.",
			"The market is a little unsettled, which you can handle if you plan for a slow month or two.",
		},
		oracle.VerdictRed: {
			"The surroundings are rough: strong rivals and shifting demand could swamp a newcomer.",
			"Outside pressures are high, and the plan has no cushion if things turn against it.",
		},
	},
	"Change Rate": {
		oracle.VerdictGreen: {
			"Things are moving at a pace you can keep up with, and the plan can adjust as you learn.",
			"The market changes slowly enough for you to learn and adapt as you go.",
		},
		oracle.VerdictAmber: {
			"The field is shifting quickly, so parts of the plan may need to change within a year.",
			"Change is steady but real; check every few months that the plan still fits.",
		},
		oracle.VerdictRed: {
			"The field is changing faster than this plan can follow, and it may be out of date by launch.",
			"Tastes and tools are moving quickly, and the plan has no clear way to keep pace.",
		},
	},
	"Completion": {
		oracle.VerdictGreen: {
			"The plan covers the essentials: who it serves, what it costs and how it reaches people.",
			"Most of the pieces are in place, and the remaining gaps are small and easy to fill.",
		},
		oracle.VerdictAmber: {
			"The outline is there, but key pieces such as pricing or how customers will find you are missing.",
			"About half of the plan is worked out; the rest needs to be written down and tested.",
		},
		oracle.VerdictRed: {
			"Too much is still missing: there is no clear customer, price or first step yet.",
			"The plan is still a rough sketch, with most of the important decisions still open.",
		},
	},
	"Curvature": {
		oracle.VerdictGreen: {
			"The direction is good: each step builds on the last and momentum should grow.",
			"Things are bending your way, with early signs that interest will keep rising.",
		},
		oracle.VerdictAmber: {
			"The direction is unclear: it could gather pace or stall depending on the next few choices.",
			"Momentum is flat for now; a small early win would show which way things will go.",
		},
		oracle.VerdictRed: {
			"The direction is unfavourable: the effort needed is likely to grow faster than the results.",
			"The trend points the wrong way, and pushing harder is unlikely to turn it around.",
		},
	},
}

// nullDimensionTexts are the analyses under a NULL verdict, when the idea
// lacks the detail to judge.
var nullDimensionTexts = map[string]string{
	"Stability":   "The description does not say what the idea would rest on, so how solid it is cannot be judged.",
	"Turbulence":  "Without knowing the market, it is not possible to say what outside pressures it would face.",
	"Change Rate": "It is unclear which field this belongs to, so how fast things change around it is unknown.",
	"Completion":  "The plan is missing its basics: who it is for, what it would cost and how it would start.",
	"Curvature":   "There is no sign yet of which way things are heading, because the goal is not stated.",
}

var nextSteps = map[oracle.Verdict][]string{
	oracle.VerdictGreen: {
		"Find three people who fit your intended customer and ask them to pay a small deposit before you build anything more.",
		"Set a launch date within six weeks and list the five tasks that must be done by then.",
	},
	oracle.VerdictAmber: {
		"Write down the two assumptions that worry you most and test each one with real customers this month.",
		"Work out your real monthly costs and the price you need to charge, then check that price with ten potential customers.",
	},
	oracle.VerdictRed: {
		"Pause any spending and talk to ten people who would be your customers to learn what they would pay for.",
		"Set the current plan aside and write down the single problem you most want to solve for someone.",
	},
	oracle.VerdictNull: {
		"Write three sentences: who the idea is for, what it gives them and how you would reach them.",
		"Describe one ordinary day of a customer using what you offer, then ask for a verdict again.",
	},
}

var alternatives = map[oracle.Verdict][]string{
	oracle.VerdictGreen: {
		"If demand proves weaker than expected, offer the same thing as a small service first rather than a full product.",
		"Partner with an established business that already serves your customers instead of building your own audience.",
	},
	oracle.VerdictAmber: {
		"Start smaller: test the idea as a weekend or part-time offer before committing to it fully.",
		"Sell a simpler version first and use what you learn to decide whether the full plan is worth it.",
	},
	oracle.VerdictRed: {
		"Consider working in an existing business in this field to learn how it runs before starting your own.",
		"Look for a nearby problem that the same skills could solve with less money and risk.",
	},
	oracle.VerdictNull: {
		"If you are still exploring, list three problems you have seen people struggle with and pick the one you understand best.",
		"Talk to someone who already does similar work and ask what they wish they had known at the start.",
	},
}

// strategyTests are the tests a Strategy Session picks three from.
var strategyTests = []string{
	"Ask ten potential customers whether they would pay your intended price, and count how many say yes without persuasion.",
	"Run a simple one-page advert for two weeks and measure how many people leave their contact details.",
	"Handle the first five orders by hand and note how long each one takes and what it really costs.",
	"Write down your monthly costs and check whether twenty sales a month would cover them.",
	"Ask three people already working in this field what usually goes wrong in the first year.",
	"Offer a small paid trial and see how many people come back for a second purchase.",
}
