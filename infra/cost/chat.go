package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/chatreply"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
)

// chatCost is what the model costs for one Sisters Chat exchange.
type chatCost struct {
	Usage gemini.Usage // the tokens of the exchange measured
	Calls int
	// Most is the ceiling: a reply written again (four calls), each
	// prompt as long as the measured exchange's longest, which has a full
	// history and a message at its limit, and every call writing its
	// output bound.
	MostInput, MostOutput int
}

func (c chatCost) measured() float64 {
	return float64(c.Usage.PromptTokens)*geminiPerInputToken + float64(c.Usage.OutputTokens+c.Usage.ThoughtTokens)*geminiPerOutputToken
}

func (c chatCost) most() float64 {
	return float64(c.MostInput)*geminiPerInputToken + float64(c.MostOutput)*geminiPerOutputToken
}

// measureChat makes one exchange at the bounds (a history of
// MaxHistoryChars, a message of MaxMessageChars) through the chat's own
// replier against the fake Gemini, which counts tokens as Gemini's rule of
// thumb does (four characters a token). Its notes and reply are shorter
// than a model's (about 100 tokens each, where the prompts allow 200 and
// 250 words): the measured figure is the input's, the ceiling the output's.
func measureChat(ctx context.Context) (chatCost, error) {
	fake := fakegemini.New(fakegemini.Options{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	client, err := gemini.New(ctx, gemini.Options{APIKey: "cost", BaseURL: srv.URL})
	if err != nil {
		return chatCost{}, err
	}
	filter, err := sosfilter.New()
	if err != nil {
		return chatCost{}, err
	}
	r := &chatreply.Replier{Model: &gemini.Caller{Primary: client, Policy: chatreply.CallerPolicy(gemini.DefaultTimeout)}, Filter: filter}
	var history []chatreply.Turn
	for size := 0; size+1000 <= chatreply.MaxHistoryChars; size += 1000 {
		role := chatreply.RolePerson
		if len(history)%2 == 1 {
			role = chatreply.RoleVoice
		}
		history = append(history, chatreply.Turn{Role: role, Text: fill("A sentence of the conversation. ", 1000)})
	}
	message := fill("A question about my plan. ", chatreply.MaxMessageChars)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := r.Reply(ctx, chatreply.Request{History: history, Message: message})
	if err != nil {
		return chatCost{}, fmt.Errorf("a chat exchange against the fake model: %w", err)
	}
	longest := 0
	for _, c := range fake.Calls() {
		longest = max(longest, (len(c.SystemInstruction)+3)/4+(len(c.UserText)+3)/4)
	}
	return chatCost{Usage: res.Usage, Calls: res.Calls,
		MostInput:  4 * longest,
		MostOutput: int(2*prompt.ChatStanceTokens + 2*prompt.ChatReplyTokens)}, nil
}

// printChat prints the model's cost of a chat exchange.
func printChat(w io.Writer, c chatCost) {
	fmt.Fprintf(w, "\nSisters Chat, the model's cost of one exchange (Gemini 2.5 Flash, prices of %s, infra/cost/prices.go)\n", GeminiPricesDate)
	fmt.Fprintf(w, "  measured: %d calls at the bounds (a full history, a message at its limit) against the fake model\n", c.Calls)
	fmt.Fprintf(w, "  %-100s %12d %-16s x $%.10f = $%.6f\n", "input tokens (the passes' prompts)", c.Usage.PromptTokens, "tokens", geminiPerInputToken, float64(c.Usage.PromptTokens)*geminiPerInputToken)
	out := c.Usage.OutputTokens + c.Usage.ThoughtTokens
	fmt.Fprintf(w, "  %-100s %12d %-16s x $%.10f = $%.6f\n", "output tokens (two notes and the reply)", out, "tokens", geminiPerOutputToken, float64(out)*geminiPerOutputToken)
	fmt.Fprintf(w, "  per exchange: $%.6f; at most $%.6f (a reply written again: 4 calls, %d input and %d output tokens)\n", c.measured(), c.most(), c.MostInput, c.MostOutput)
	fmt.Fprintf(w, "  per 1,000 exchanges: $%.2f, at most $%.2f (the chat function's Lambda time and table writes are not in these)\n", 1000*c.measured(), 1000*c.most())
}

// fill repeats s to n bytes of ASCII.
func fill(s string, n int) string {
	return strings.Repeat(s, n/len(s)+1)[:n]
}
