package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// motoCPU is what a moto server has spent (serve.py's GET /_oracle/cpu):
// its process's CPU time and, by request kind, the count and the CPU time
// of the threads that answered them.
type motoCPU struct {
	ProcessCPU float64                `json:"process_cpu_s"`
	Requests   map[string]motoRequest `json:"requests"`
	// Processes are a group's processes' CPU time, by part (dynamodb, s3,
	// rest); none for a moto of one process.
	Processes map[string]float64 `json:"processes"`
}

type motoRequest struct {
	Count int     `json:"count"`
	CPU   float64 `json:"cpu_s"`
}

func readMotoCPU(ctx context.Context, t *testing.T, endpoint string) motoCPU {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/_oracle/cpu", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("moto's CPU: %v", err)
	}
	defer resp.Body.Close()
	var m motoCPU
	if err := json.NewDecoder(resp.Body).Decode(&m); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("moto's CPU: %d %v", resp.StatusCode, err)
	}
	return m
}

// logMotoCPU logs what moto spent between two readings, per order: in all,
// and by request kind, the dearest first.
func logMotoCPU(t *testing.T, before, after motoCPU, orders int) {
	t.Helper()
	type row struct {
		kind  string
		count int
		cpu   float64
	}
	var rows []row
	answered := 0.0
	for kind, a := range after.Requests {
		b := before.Requests[kind]
		if a.Count == b.Count {
			continue
		}
		rows = append(rows, row{kind, a.Count - b.Count, a.CPU - b.CPU})
		answered += a.CPU - b.CPU
	}
	slices.SortFunc(rows, func(a, b row) int { return int((b.cpu - a.cpu) * 1e6) })
	n := float64(orders)
	var procs []string
	for name, cpu := range after.Processes {
		procs = append(procs, fmt.Sprintf("%s %.0f ms", name, (cpu-before.Processes[name])*1000/n))
	}
	slices.Sort(procs)
	t.Logf("moto: %.0f ms of CPU an order (%.1f s in all; by process: %s), %.0f ms of it answering requests:",
		(after.ProcessCPU-before.ProcessCPU)*1000/n, after.ProcessCPU-before.ProcessCPU, strings.Join(procs, ", "), answered*1000/n)
	for _, r := range rows {
		t.Logf("  %-32s %6d (%5.2f an order) %7.2f ms each %6.1f ms an order", r.kind, r.count, float64(r.count)/n, r.cpu*1000/float64(r.count), r.cpu*1000/n)
	}
}

// stackCPU is the CPU time, in seconds, of this test process (the local
// stack: gateway, pollers, runtime API, fakes, meter, and the test's
// payers) and of its child processes by command name (the functions'
// bootstraps; a moto it started).
func stackCPU(t *testing.T) (self float64, children map[string]float64) {
	t.Helper()
	self = procCPU(t, "/proc/self/stat")
	children = map[string]float64{}
	pid := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		name, fields, ok := statFields(string(b))
		if !ok || fields[1] != pid {
			continue
		}
		children[name] += ticks(fields)
	}
	return self, children
}

func procCPU(t *testing.T, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, fields, ok := statFields(string(b))
	if !ok {
		t.Fatalf("%s: %q", path, b)
	}
	return ticks(fields)
}

// statFields splits /proc/PID/stat after the command's name (which may
// hold spaces): fields[0] is the state, fields[1] the parent's pid.
func statFields(stat string) (string, []string, bool) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	fields := strings.Fields(stat[end+1:])
	return stat[open+1 : end], fields, len(fields) > 13
}

// ticks is a process's user and system time (utime, stime), at Linux's
// 100 ticks a second.
func ticks(fields []string) float64 {
	u, _ := strconv.ParseFloat(fields[11], 64)
	s, _ := strconv.ParseFloat(fields[12], 64)
	return (u + s) / 100
}

// logStackCPU logs the local stack's CPU time between two readings, per
// order.
func logStackCPU(t *testing.T, selfBefore float64, before map[string]float64, selfAfter float64, after map[string]float64, orders int, took time.Duration) {
	t.Helper()
	n := float64(orders)
	parts := []string{fmt.Sprintf("the test process (stack and payers) %.0f ms", (selfAfter-selfBefore)*1000/n)}
	names := make([]string, 0, len(after))
	for name := range after {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.0f ms", name, (after[name]-before[name])*1000/n))
	}
	t.Logf("local stack's CPU an order over %.0f s: %s", took.Seconds(), strings.Join(parts, ", "))
}
