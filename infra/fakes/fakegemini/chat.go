package fakegemini

import (
	"crypto/sha256"
	"strings"
)

// A request for free text (responseMimeType text/plain) is a chat pass: the
// fake answers it with plausible prose instead of a verdict. Which pass it
// is (one of the two stances, or the merge) is read from the system
// instruction, by the phrase that gives each stance its task in
// shared/prompt's chat prompts (a test keeps the two in step); any other
// text request is answered as a merge. The text is picked by the prompt's
// hash, as a verdict is, and a Scenario's LeakTerms are written into it.
//
// The fake does not import shared/prompt: the content filter's own tests
// use the fake's verdicts, and the prompt package imports the filter.

// The chat passes, as shared/prompt names them (prompt.ChatPass).
const (
	PassBuild = "build"
	PassTest  = "test"
	PassMerge = "merge"
)

// chatMIMEType is what a chat pass asks for (prompt.ChatResponseMIMEType).
const chatMIMEType = "text/plain"

// StanceMarkers are the phrases of the stances' instructions the fake
// tells them apart by.
var StanceMarkers = map[string]string{
	PassBuild: "from one side only: make the strongest honest case for it",
	PassTest:  "from one side only: test it as hard as you honestly can",
}

// chatPass is the chat pass of a system instruction: a stance by its
// marker, else the merge.
func chatPass(system string) string {
	for _, p := range []string{PassBuild, PassTest} {
		if strings.Contains(system, StanceMarkers[p]) {
			return p
		}
	}
	return PassMerge
}

// ChatAnswer is the text the fake model writes, unspoilt, for a chat pass's
// system instruction and user text: the same prompt always gets the same
// one. Tests compare it with what the merge was given.
func ChatAnswer(system, user string) string {
	return chatText(sha256.Sum256([]byte(system+"\x00"+user)), chatPass(system), Scenario{})
}

// chatText is the answer to a chat pass for a prompt hash and scenario.
func chatText(hash [sha256.Size]byte, pass string, sc Scenario) string {
	p := &picker{seed: hash}
	var parts []string
	switch pass {
	case PassBuild:
		parts = []string{one(p, buildOpenings), one(p, buildMiddles), one(p, buildClosings)}
	case PassTest:
		parts = []string{one(p, testOpenings), one(p, testMiddles), one(p, testClosings)}
	default:
		parts = []string{one(p, mergeOpenings), one(p, mergeMiddles) + "\n\n" + one(p, mergeClosings)}
	}
	return strings.Join(parts, " ") + leakSentence(sc.LeakTerms)
}

var buildOpenings = []string{
	"There is a real need behind this, and the person has already noticed it before most people would.",
	"The strongest point is that they know the customers they would serve, which most new ventures have to guess at.",
	"This plays to skills the person has already shown, so the first months would not be spent learning the basics.",
	"The idea is modest in what it needs up front, which keeps the cost of finding out small.",
}

var buildMiddles = []string{
	"If the first small test works, each later step can build on what it taught, and the risk shrinks as it grows.",
	"Word of mouth could carry much of the early marketing, since the people who need this already talk to each other.",
	"A narrow start is an advantage here: doing one thing well for a few people is how a reputation gets made.",
	"The timing helps too: the habits it relies on are growing rather than fading.",
}

var buildClosings = []string{
	"They should build on the relationships they already have and ask the first customers to pay early.",
	"The next step worth taking is a small paid trial with real people, not more planning.",
	"Keeping the first version simple would let them learn fast and spend little.",
	"They are underrating how much a clear, narrow promise is worth to the people they want to serve.",
}

var testOpenings = []string{
	"The plan assumes people will pay, but nothing in the conversation shows that anyone has yet.",
	"The costs are the weak side: rent, time and the months before income arrives are not accounted for.",
	"It leans on one channel to reach customers, and if that channel dries up there is no second one.",
	"The hardest part, finding the first customers, is the part the person has said least about.",
}

var testMiddles = []string{
	"Competitors who are already established could match the offer quickly, and price would then decide.",
	"If it takes twice as long as hoped, the savings set aside may not last until it pays its way.",
	"Doing all of it alone is a risk in itself: one illness or one bad month stops everything.",
	"The numbers have not been written down, so it is hard to say where the break-even point lies.",
}

var testClosings = []string{
	"They should check, before spending much, whether ten real people will commit money to it.",
	"The first thing to test is the cost of winning one customer, measured rather than guessed.",
	"A written budget for the first six months would show quickly whether this can stand on its own.",
	"They should decide in advance what result would make them stop, so a slow start does not drag on.",
}

var mergeOpenings = []string{
	"You have noticed a real need, and that counts for more than most people think. What I do not see yet is proof that people will pay for your answer to it.",
	"There is something solid here: you know the people you want to serve, and you have the skills to serve them. The weak side is money, and it deserves a closer look before you commit.",
	"I think this can work, but not in the form you describe yet. Your strongest card is how well you know your customers; your biggest gap is how you will reach enough of them.",
	"This is worth pursuing carefully. The idea is modest in what it needs up front, which is good, but the plan says little about the months before it pays its way.",
}

var mergeMiddles = []string{
	"The risk I would take most seriously is time: if it takes twice as long as you hope, your savings have to carry you through it.",
	"Competitors could copy the offer, so what keeps people coming back has to be something they cannot copy easily, like your relationships or your reputation.",
	"Relying on one way of finding customers is fragile. If it stops working, you want a second one ready.",
	"Writing the numbers down would change how this feels: the cost of each customer and the break-even point will tell you more than any amount of planning.",
}

var mergeClosings = []string{
	"In your place I would run a small paid trial with ten real people first, and decide in advance what result would make you stop.",
	"My next step would be a simple budget for the first six months and one week spent asking real customers to commit money.",
	"Start narrow, ask for money early, and let what the first customers do, not what they say, decide the next step.",
	"Before anything else, find out what it costs you to win one customer. That single figure will tell you whether the rest can stand.",
}
