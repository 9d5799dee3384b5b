package provision

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/sam"
)

// AsDeployed gives the test's process the Go runtime's settings the
// template gives the function logicalID (GOGC, GOMEMLIMIT), until the test
// ends: a benchmark of a function's own work then measures the garbage
// collector as the function runs it in Lambda.
func AsDeployed(tb testing.TB, logicalID string) {
	tb.Helper()
	tmpl, err := sam.Load(TemplatePath())
	if err != nil {
		tb.Fatal(err)
	}
	for _, fn := range tmpl.Functions() {
		if fn.LogicalID != logicalID {
			continue
		}
		gogc, limit, err := GCSettings(fn)
		if err != nil {
			tb.Fatal(err)
		}
		before, beforeLimit := debug.SetGCPercent(gogc), debug.SetMemoryLimit(limit)
		tb.Cleanup(func() {
			debug.SetGCPercent(before)
			debug.SetMemoryLimit(beforeLimit)
		})
		return
	}
	tb.Fatalf("no function %s in the template", logicalID)
}

// GCSettings are the GOGC percentage and the GOMEMLIMIT in bytes the
// template gives fn, read as the Go runtime reads them (GOGC=off is -1).
func GCSettings(fn sam.Function) (gogc int, limit int64, err error) {
	g, _ := fn.Env["GOGC"].(string)
	switch g {
	case "":
		gogc = 100
	case "off":
		gogc = -1
	default:
		if gogc, err = strconv.Atoi(g); err != nil || gogc < 0 {
			return 0, 0, fmt.Errorf("%s: GOGC %q is not a percentage", fn.LogicalID, g)
		}
	}
	m, _ := fn.Env["GOMEMLIMIT"].(string)
	if m == "" {
		return gogc, 1<<63 - 1, nil
	}
	limit, err = MemoryLimit(m)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", fn.LogicalID, err)
	}
	return gogc, limit, nil
}

// MemoryLimit reads a GOMEMLIMIT value: a number of bytes with an optional
// B, KiB, MiB, GiB or TiB suffix, as the Go runtime reads it.
func MemoryLimit(v string) (int64, error) {
	units := []struct {
		suffix string
		scale  int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	scale := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, scale = n, u.scale
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("GOMEMLIMIT %q is not a size such as 200MiB", v)
	}
	return n * scale, nil
}
