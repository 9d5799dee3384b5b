// Command benchreport reads the output of `go test -bench` (a file named
// as its argument, or stdin) and prints one table: each performance budget
// of docs/performance.md that a benchmark measures, the figure measured,
// the budget's limit, and pass or fail. It exits 1 when a budget fails or
// a benchmark behind one is missing from the output, 2 when the output
// cannot be read. `make bench` ends with it.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	in := stdin
	switch len(args) {
	case 0:
	case 1:
		f, err := os.Open(args[0])
		if err != nil {
			fmt.Fprintln(stderr, "benchreport:", err)
			return 2
		}
		defer f.Close()
		in = f
	default:
		fmt.Fprintln(stderr, "usage: benchreport [go-test-bench-output]")
		return 2
	}
	rs, err := Parse(in)
	if err != nil {
		fmt.Fprintln(stderr, "benchreport:", err)
		return 2
	}
	rows := Judge(rs, Budgets)
	fmt.Fprint(stdout, Table(rows))
	failed, missing := 0, 0
	for _, r := range rows {
		switch r.Verdict {
		case Fail:
			failed++
		case Missing:
			missing++
		}
	}
	if failed+missing > 0 {
		fmt.Fprintf(stdout, "\n%d of %d budgets failed, %d missing their benchmark\n", failed, len(rows), missing)
		return 1
	}
	fmt.Fprintf(stdout, "\nall %d budgets met\n", len(rows))
	return 0
}

// Table lays the rows out as a Markdown table, its columns aligned.
func Table(rows []Row) string {
	cells := [][]string{{"budget", "measured", "limit", "verdict"}}
	for _, r := range rows {
		cells = append(cells, []string{r.Budget, r.Measured, r.Limit, string(r.Verdict)})
	}
	width := make([]int, 4)
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(row []string) {
		for i, c := range row {
			fmt.Fprintf(&b, "| %s%s ", c, strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
		}
		b.WriteString("|\n")
	}
	line(cells[0])
	rule := make([]string, 4)
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
	}
	line(rule)
	for _, row := range cells[1:] {
		line(row)
	}
	return b.String()
}
