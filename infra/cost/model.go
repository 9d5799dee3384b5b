package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
)

// tokens are a sale's model tokens: the prompts read, the text written,
// and the thinking (billed as output).
type tokens struct{ In, Out, Thought int }

func (t tokens) cost() float64 {
	return float64(t.In)*geminiPerInputToken + float64(t.Out+t.Thought)*geminiPerOutputToken
}

// verdictTokens are a tier's tokens for one verdict: Typical is one call
// with a typical query as the fake counts it (no thinking: the fake does
// not think); Most is the ceiling, the first call and its one stricter
// retry (gemini.Caller), each with a query at its bound, writing the
// longest reply the tier's bounds accept and thinking Flash's whole budget.
type verdictTokens struct {
	Tier          oracle.Tier
	Typical, Most tokens
}

// typicalQueryChars is the query a typical customer writes: about 250
// words on the plan and its context (an assumption, not a measure).
const typicalQueryChars = 1500

// flashThinkingBudget is the most Gemini 2.5 Flash thinks in one call
// (https://ai.google.dev/gemini-api/docs/thinking): verdict calls set no
// budget, so the model thinks as much as it likes up to this.
const flashThinkingBudget = 24576

// replyChars is the longest reply a tier's bounds accept, in characters:
// its texts at their bounds (oracle.Max*Chars) and the JSON around them.
func replyChars(t oracle.Tier) int {
	const framing = 300 // keys, verdicts, quotes and braces
	n := framing + oracle.MaxSummaryChars
	if t != oracle.TierQuick {
		n += len(oracle.Dimensions) * oracle.MaxAnalysisChars
	}
	if t == oracle.TierStrategy {
		n += (2 + oracle.StrategyTests) * oracle.MaxStrategyChars
	}
	return n
}

// measureVerdicts asks the fake Gemini for each tier's verdict with the
// generator's own request (prompt.Build, prompt.Schema, prompt.Seed) and
// reads the usage it reports, as the generator reads Google's.
func measureVerdicts(ctx context.Context) ([]verdictTokens, error) {
	srv := httptest.NewServer(fakegemini.New(fakegemini.Options{}))
	defer srv.Close()
	client, err := gemini.New(ctx, gemini.Options{APIKey: "cost", BaseURL: srv.URL})
	if err != nil {
		return nil, err
	}
	ask := func(t oracle.Tier, query string, strict bool) (gemini.Usage, error) {
		p, err := prompt.Build(t, query)
		if err != nil {
			return gemini.Usage{}, err
		}
		r, err := client.Generate(ctx, gemini.Request{System: p.System, User: p.User, Schema: prompt.Schema(t), Seed: prompt.Seed, Strict: strict})
		if err != nil {
			return gemini.Usage{}, fmt.Errorf("a %s verdict from the fake model: %w", t, err)
		}
		return r.Usage, nil
	}
	typical := fill("I want to open a small bakery in my town and sell online too. ", typicalQueryChars)
	longest := fill("My plan, its market, its money and its people, told at length. ", oracle.MaxQueryUnits)
	var out []verdictTokens
	for _, t := range oracle.Tiers() {
		u, err := ask(t, typical, false)
		if err != nil {
			return nil, err
		}
		first, err := ask(t, longest, false)
		if err != nil {
			return nil, err
		}
		retry, err := ask(t, longest, true)
		if err != nil {
			return nil, err
		}
		reply := (replyChars(t) + 3) / 4
		out = append(out, verdictTokens{Tier: t,
			Typical: tokens{In: u.PromptTokens, Out: u.OutputTokens, Thought: u.ThoughtTokens},
			Most:    tokens{In: first.PromptTokens + retry.PromptTokens, Out: 2 * reply, Thought: 2 * flashThinkingBudget}})
	}
	return out, nil
}

// sale is one thing sold and what it costs to serve.
type sale struct {
	What    string
	Revenue float64 // US dollars received, before the payment's fee
	Fee     float64 // the payment's fee, US dollars
	Infra   float64 // everything but the model, US dollars
	Typical tokens
	Most    tokens
}

func (s sale) margin(t tokens) float64 { return s.Revenue - s.Fee - s.Infra - t.cost() }

// cadToUSD converts Canadian cents to US dollars at the dated rate.
func cadToUSD(cents int64) float64 { return float64(cents) / 100 * usdPerCAD }

// cardFee is Stripe's fee on a Canadian card payment, in US dollars.
func cardFee(cents int64) float64 {
	return cadToUSD(int64(float64(cents)*stripeCardPercent/100+0.5)) + cadToUSD(stripeCardFixedCents)
}

// sales lists every sale of the table: each tier paid by card (C$, Stripe's
// fee) and by an agent (USDC, taken at one US dollar; the facilitator's fee
// is not in it), each at infra (a verdict's infrastructure, from the burst);
// and a month of Sisters Chat, typical (chatTypical exchanges) and at the
// daily cap every day (dailyCap times daysPerMonth), the chat function's
// own infrastructure not in it.
func sales(verdicts []verdictTokens, chat chatCost, infra float64, dailyCap int) []sale {
	var out []sale
	for _, v := range verdicts {
		cents := v.Tier.PriceCents()
		out = append(out, sale{What: fmt.Sprintf("%s, C$%.2f by card", v.Tier.Name(), float64(cents)/100),
			Revenue: cadToUSD(cents), Fee: cardFee(cents), Infra: infra, Typical: v.Typical, Most: v.Most})
	}
	for _, v := range verdicts {
		usdc := v.Tier.PriceUSDCAtomic()
		out = append(out, sale{What: fmt.Sprintf("%s, %s USDC by an agent", v.Tier.Name(), oracle.FormatUSDC(usdc)),
			Revenue: float64(usdc) / 1e6, Infra: infra, Typical: v.Typical, Most: v.Most})
	}
	exchange := tokens{In: chat.Usage.PromptTokens, Out: chat.Usage.OutputTokens, Thought: chat.Usage.ThoughtTokens}
	most := tokens{In: chat.MostInput, Out: chat.MostOutput}
	month := func(n int, t tokens) tokens { return tokens{In: n * t.In, Out: n * t.Out, Thought: n * t.Thought} }
	cents := oracle.ChatPriceCents
	capped := dailyCap * daysPerMonth
	for _, m := range []struct {
		what string
		n    int
	}{{"a typical month", chatTypical}, {"the daily cap every day", capped}} {
		out = append(out, sale{What: fmt.Sprintf("Sisters Chat, C$%.2f a month: %s, %d exchanges", float64(cents)/100, m.what, m.n),
			Revenue: cadToUSD(cents), Fee: cardFee(cents), Typical: month(m.n, exchange), Most: month(m.n, most)})
	}
	return out
}

// chatTypical is a typical subscriber's exchanges in a month: two a day
// (an assumption until the chat's figures say otherwise).
const chatTypical = 60

// printModel prints the tokens of each tier and the margins' table.
func printModel(w io.Writer, verdicts []verdictTokens, rows []sale) {
	fmt.Fprintf(w, "\nThe model per verdict (Gemini 2.5 Flash, input $%.2f, output and thinking $%.2f a million tokens, prices of %s)\n",
		geminiPerInputToken*1e6, geminiPerOutputToken*1e6, GeminiPricesDate)
	fmt.Fprintf(w, "  typical: a %d-character query, one call, as the fake counts it (four characters a token; it does not think)\n", typicalQueryChars)
	fmt.Fprintf(w, "  at most: a query at its bound, the call and its stricter retry, each writing the tier's longest reply and thinking %d tokens\n", flashThinkingBudget)
	for _, v := range verdicts {
		fmt.Fprintf(w, "  %-18s typical %6d in %5d out = $%.6f;   at most %6d in %5d out %6d thinking = $%.6f\n",
			v.Tier.Name(), v.Typical.In, v.Typical.Out+v.Typical.Thought, v.Typical.cost(), v.Most.In, v.Most.Out, v.Most.Thought, v.Most.cost())
	}
	fmt.Fprintf(w, "\nMargins, US dollars (C$1 = US$%.4f on %s; Stripe's card fee %.1f%% + C$%.2f; USDC at US$1; infra: a verdict's, from the burst above)\n",
		usdPerCAD, ExchangeRateDate, stripeCardPercent, float64(stripeCardFixedCents)/100)
	fmt.Fprintf(w, "  %-92s %9s %8s %9s %10s %10s %10s %10s\n", "sale", "revenue", "fee", "infra", "model", "margin", "model max", "margin min")
	for _, s := range rows {
		fmt.Fprintf(w, "  %-92s %9.4f %8.4f %9.6f %10.6f %10.4f %10.6f %10.4f\n",
			s.What, s.Revenue, s.Fee, s.Infra, s.Typical.cost(), s.margin(s.Typical), s.Most.cost(), s.margin(s.Most))
	}
	var short []string
	for _, s := range rows {
		if s.margin(s.Most) < 0 {
			short = append(short, s.What)
		}
	}
	if len(short) > 0 {
		fmt.Fprintf(w, "  at a loss at most: %s\n", strings.Join(short, "; "))
	}
}
