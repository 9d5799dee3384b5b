package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Results are the benchmarks of one `go test -bench` output, by name
// (sub-benchmarks by their full path, without the GOMAXPROCS suffix).
type Results map[string]*Result

// Result is one benchmark's figures: for each unit (ns/op, allocs/op, or a
// unit of b.ReportMetric such as p95/floor), its value in every run of the
// benchmark (-count n gives n).
type Result struct {
	Name    string
	Package string
	Values  map[string][]float64
}

// Value is the median of the unit's values, and whether the unit was
// reported at all.
func (r *Result) Value(unit string) (float64, bool) {
	vs := r.Values[unit]
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// procsSuffix is the -N that go test appends to a benchmark's name when
// GOMAXPROCS is not 1.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// Parse reads go test's benchmark output. A result line is the name, the
// iteration count, then value and unit pairs; every other line (the
// headers, logs, PASS, ok) is skipped, except `pkg:`, which names the
// package of the lines that follow. A line that starts like a result but
// does not read as one is an error: a report read from it would be wrong.
func Parse(r io.Reader) (Results, error) {
	out := Results{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if p, ok := strings.CutPrefix(text, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 2 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			// A benchmark's own log line, or the name go test prints
			// before a benchmark that fails or logs.
			continue
		}
		if len(fields)%2 != 0 {
			return nil, fmt.Errorf("line %d: a value without its unit: %q", line, text)
		}
		name := procsSuffix.ReplaceAllString(fields[0], "")
		res := out[name]
		if res == nil {
			res = &Result{Name: name, Package: pkg, Values: map[string][]float64{}}
			out[name] = res
		}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q is not a number: %q", line, fields[i], text)
			}
			res.Values[fields[i+1]] = append(res.Values[fields[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output: %w", err)
	}
	return out, nil
}

// Under returns the results of the sub-benchmarks of parent whose path
// below it matches pattern (path.Match style, e.g. "*/clean"), by name.
func (rs Results) Under(parent, pattern string) []*Result {
	var out []*Result
	for name, r := range rs {
		rest, ok := strings.CutPrefix(name, parent+"/")
		if ok && match(pattern, rest) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *Result) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// match is path.Match without its errors: the patterns are this
// program's own.
func match(pattern, name string) bool {
	ps, ns := strings.Split(pattern, "/"), strings.Split(name, "/")
	if len(ps) != len(ns) {
		return false
	}
	for i := range ps {
		if ps[i] != "*" && ps[i] != ns[i] {
			return false
		}
	}
	return true
}
