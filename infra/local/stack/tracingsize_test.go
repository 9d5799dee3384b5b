package stack

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

// otelSDK is the module of OpenTelemetry's SDK, which shared/tracing's
// provider links and a build with the notracing tag must not.
const otelSDK = "go.opentelemetry.io/otel/sdk"

// BenchmarkTracingSize reports what tracing adds to each function's
// bootstrap: its size as `make build` makes it (linux/arm64, stripped)
// less its size built the same way with the notracing tag, which compiles
// shared/tracing's provider, exporter and extension out and keeps its API
// (OpenTelemetry's no-op spans). One metric per function
// (<LogicalId>-MB) and the largest (max-MB), in MB; the budget is 1.5 MB
// each. Every function is built in one go build per variant, so the
// benchmark runs once.
func BenchmarkTracingSize(b *testing.B) {
	root := filepath.Dir(provision.TemplatePath())
	t, err := sam.Load(provision.TemplatePath())
	if err != nil {
		b.Fatal(err)
	}
	traced := buildAll(b, root, "lambda.norpc,grpcnotrace")
	untraced := buildAll(b, root, "lambda.norpc,grpcnotrace,notracing")
	largest := 0.0
	for _, fn := range t.Functions() {
		name := path.Base(strings.TrimSuffix(fn.CodeURI, "/"))
		with, without := filepath.Join(traced, name), filepath.Join(untraced, name)
		// The difference is tracing's only if the one links the SDK and
		// the other does not.
		if !linksModule(b, with, otelSDK) || linksModule(b, without, otelSDK) {
			b.Fatalf("%s: the traced build must link %s and the notracing build must not", fn.LogicalID, otelSDK)
		}
		mb := float64(fileSize(b, with)-fileSize(b, without)) / (1 << 20)
		b.ReportMetric(mb, fn.LogicalID+"-MB")
		largest = max(largest, mb)
	}
	b.ReportMetric(largest, "max-MB")
}

// buildAll builds every function as `make build` does, with tags, into a
// new directory, one bootstrap each named for its folder.
func buildAll(b *testing.B, root, tags string) string {
	b.Helper()
	dir := b.TempDir()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-tags", tags, "-o", dir+string(filepath.Separator), "./functions/...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the functions with -tags %s: %v\n%s", tags, err, msg)
	}
	return dir
}

// linksModule reports whether the binary at file was built with a package
// of module.
func linksModule(b *testing.B, file, module string) bool {
	b.Helper()
	info, err := buildinfo.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range info.Deps {
		if d.Path == module {
			return true
		}
	}
	return false
}

func fileSize(b *testing.B, file string) int64 {
	b.Helper()
	st, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}
