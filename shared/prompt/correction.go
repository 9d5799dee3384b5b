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

// list joins names as English does: "A", "A and B", "A, B and C".
func list(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
