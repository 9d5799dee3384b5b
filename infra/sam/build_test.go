package sam

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"42sisters.ai/oracle/infra/tools"
)

const root = "../.."

// lambdaBuild is the one way a function's bootstrap is built, for Lambda
// on arm64: static, stripped, without the RPC runtime.
const lambdaBuild = "CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -ldflags='-s -w' -tags lambda.norpc,grpcnotrace -o "

// TestSAMBuildsWhatMakeBuilds: every function of the template is built by
// sam build through the Makefile's build-<LogicalId> target, which is the
// command make build runs, with the same flags.
func TestSAMBuildsWhatMakeBuilds(t *testing.T) {
	var doc struct {
		Resources map[string]struct {
			Metadata map[string]string `yaml:"Metadata"`
		} `yaml:"Resources"`
	}
	b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	tmpl, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	all := makeDryRun(t, "build")
	fns := tmpl.Functions()
	if len(fns) == 0 {
		t.Fatal("the template has no function")
	}
	for _, fn := range fns {
		md := doc.Resources[fn.LogicalID].Metadata
		if md["BuildMethod"] != "makefile" || md["ProjectRootDirectory"] != "." || md["ContextPath"] != "." {
			t.Errorf("%s: Metadata %v, want BuildMethod makefile with the module root as ProjectRootDirectory and ContextPath", fn.LogicalID, md)
		}
		pkg := "./" + strings.TrimSuffix(fn.CodeURI, "/")
		name := filepath.Base(pkg)
		want := lambdaBuild + "/artifacts/bootstrap " + pkg
		if got := strings.TrimSpace(makeDryRun(t, "build-"+fn.LogicalID, "ARTIFACTS_DIR=/artifacts")); got != want {
			t.Errorf("sam build of %s runs\n  %s\nwant\n  %s", fn.LogicalID, got, want)
		}
		abs, _ := filepath.Abs(filepath.Join(root, ".build", "lambda", name))
		if want := lambdaBuild + abs + "/bootstrap " + pkg; !strings.Contains(all, want) {
			t.Errorf("make build does not run %q; it runs:\n%s", want, all)
		}
	}
}

// TestDeployBuildsFromScratch: make deploy deploys what make build builds.
// SAM's build cache is keyed on each function's CodeUri (functions/<name>/),
// so with it a change only in shared/ would deploy the previous bootstrap;
// and make deploy runs unattended, so it must not stop for a changeset
// prompt. Both are off in samconfig.toml (for a sam run by hand) and on make
// deploy's command line (whatever samconfig.toml says later).
func TestDeployBuildsFromScratch(t *testing.T) {
	cfg := samconfig(t)
	for _, c := range []struct{ section, key, want string }{
		{"default.build.parameters", "cached", "false"},
		{"default.deploy.parameters", "confirm_changeset", "false"},
	} {
		if got, ok := cfg[c.section][c.key]; ok && got != c.want {
			t.Errorf("samconfig.toml [%s] %s = %s, want %s (or unset)", c.section, c.key, got, c.want)
		}
	}
	deploy := makeDryRun(t, "deploy")
	for _, want := range []string{"sam build --no-cached", "sam deploy --no-confirm-changeset"} {
		if !strings.Contains(deploy, want) {
			t.Errorf("make deploy does not run %q; it runs:\n%s", want, deploy)
		}
	}
}

// samconfig reads samconfig.toml's flat sections: [section] and key = value.
func samconfig(t *testing.T) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]map[string]string{"": {}}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			cfg[section] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("samconfig.toml: unexpected line %q", line)
			}
			cfg[section][strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return cfg
}

// TestTemplateTransforms runs the SAM transform CloudFormation applies at
// deploy time, with aws-sam-translator (which cfn-lint brings), so that a
// template SAM would refuse fails here rather than in sam deploy.
func TestTemplateTransforms(t *testing.T) {
	python := tools.Find(t, "python3")
	if err := exec.Command(python, "-c", "import samtranslator").Run(); err != nil {
		if os.Getenv(tools.RequireEnv) != "" {
			t.Fatalf("aws-sam-translator is not installed (make tools installs cfn-lint, which brings it): %v", err)
		}
		t.Skip("aws-sam-translator is not installed: run make tools")
	}
	cmd := exec.Command(python, "transform.py", filepath.Join(root, "template.yaml"))
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION=ca-central-1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SAM transform failed: %v\n%s", err, stderr.String())
	}
	var types map[string]string
	if err := json.Unmarshal(out, &types); err != nil {
		t.Fatalf("transform output: %v", err)
	}
	for name, typ := range map[string]string{
		"WebhookFunction":                 "AWS::Lambda::Function",
		"GeneratorFunction":               "AWS::Lambda::Function",
		"WebhookFunctionAliaslive":        "AWS::Lambda::Alias",
		"CheckoutFunctionAliaslive":       "AWS::Lambda::Alias",
		"WebhookFunctionDeploymentGroup":  "AWS::CodeDeploy::DeploymentGroup",
		"CheckoutFunctionDeploymentGroup": "AWS::CodeDeploy::DeploymentGroup",
	} {
		if types[name] != typ {
			t.Errorf("the transformed template has %s as %q, want %s", name, types[name], typ)
		}
	}
}

func makeDryRun(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-n", "--no-print-directory"}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
