package prompt

import (
	"fmt"
	"strings"

	"42sisters.ai/oracle/shared/oracle"
)

// Contradiction is what the stricter retry after a self-contradicting reply
// tells the model, after the system instruction: its overall verdict was
// verdict while it judged the named dimensions (of present) majority. The
// names are oracle.Dimensions, never the model's text. It is part of the
// prompt, so it is under Version and in the golden files.
func Contradiction(verdict, majority oracle.Verdict, dimensions []string, present int) string {
	return fmt.Sprintf("YOUR PREVIOUS ANSWER CONTRADICTED ITSELF\n"+
		"Your previous answer gave the overall verdict %s, but it judged %d of the %d dimensions %s (%s). "+
		"An overall verdict of %s cannot stand over a breakdown that is mostly %s. "+
		"Judge the submission again from the start, and give an overall verdict that agrees with your dimension verdicts: "+
		"if the dimensions were judged right, the overall verdict must follow them; if a dimension was judged wrong, correct it.\n",
		verdict, len(dimensions), present, majority, list(dimensions), verdict, majority)
}

// Unpublishable is what the retry after a reply the content filter would
// repair or hold tells the model, after the system instruction: the words
// and symbols of that reply that no answer may contain, as the filter
// found them (never more of the reply), or, when the filter read them only
// through a disguise, what kind of thing to avoid. It is part of the
// prompt, so it is under Version and in the golden files.
func Unpublishable(words []string) string {
	named := "It contained words or symbols that we cannot publish: internal names, symbols, or letters spaced, swapped or taken from other alphabets. "
	if len(words) > 0 {
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = `"` + neutralise(w) + `"`
		}
		named = "It contained " + list(quoted) + ", which we cannot publish. "
	}
	return "YOUR PREVIOUS ANSWER CANNOT BE PUBLISHED AS WRITTEN\n" + named +
		"Some of these are ordinary words that we reserve all the same: do not write them anywhere in your answer, in any spelling, case or alphabet, even in their everyday sense. " +
		"Write the whole answer again with the same judgement, saying the same things in other words: describe a thing instead of naming it " +
		"(\"the radiation treatment\", \"the green-screen backdrop\", \"the brewery down the road\"), in plain English and plain digits.\n"
}

// list joins names as English does: "A", "A and B", "A, B and C".
func list(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
