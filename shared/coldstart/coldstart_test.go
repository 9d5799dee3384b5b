package coldstart_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/obs"
)

// The cold start runs in a child process, since a failure ends it.
func TestMain(m *testing.M) {
	switch os.Getenv("COLDSTART_CHILD") {
	case "settings":
		coldstart.Start(func(context.Context, aws.Config) (struct{}, error) {
			return struct{}{}, errors.New("invalid configuration: ORDERS_TABLE is required")
		})
		os.Exit(0)
	case "ok":
		fn, n := coldstart.Start(func(_ context.Context, cfg aws.Config) (int, error) { return 7, nil })
		if n != 7 || fn.AWS.Region != "ca-central-1" || fn.Alerter("arn:topic", nil).Topic != "arn:topic" {
			os.Exit(3)
		}
		fn.Metrics.Count(obs.HealthRuns, 1)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestStart(t *testing.T) {
	// Lambda sets the execution role's keys in the environment; a
	// function reads nothing else (awsenv.LoadLambda).
	const keys = "test"
	cases := []struct {
		child, region, keys, namespace string
		exit                           int
		log                            []string
	}{
		{"ok", "ca-central-1", keys, "Oracle/oracle-staging", 0, []string{`"Namespace":"Oracle/oracle-staging"`}},
		{"settings", "ca-central-1", keys, "Oracle/oracle", 1, []string{`"msg":"cold start failed: settings"`, "ORDERS_TABLE is required"}},
		{"ok", "", keys, "Oracle/oracle", 1, []string{`"msg":"cold start failed: AWS configuration"`, "AWS_REGION is not set"}},
		{"ok", "ca-central-1", "", "Oracle/oracle", 1, []string{`"msg":"cold start failed: AWS configuration"`, "no credentials in the environment"}},
		// The stack's namespace is what its alarms watch: without one, the
		// figures would go where no alarm looks.
		{"ok", "ca-central-1", keys, "", 1, []string{`"msg":"cold start failed: metrics namespace"`, "METRICS_NAMESPACE is required"}},
		{"ok", "ca-central-1", keys, `Oracle/"x"`, 1, []string{`"msg":"cold start failed: metrics namespace"`, "not a CloudWatch namespace"}},
	}
	for _, c := range cases {
		t.Run(c.child+"/"+c.region+"/"+c.keys+"/"+c.namespace, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "COLDSTART_CHILD="+c.child, "AWS_REGION="+c.region, "AWS_DEFAULT_REGION=", "METRICS_NAMESPACE="+c.namespace,
				"AWS_ACCESS_KEY_ID="+c.keys, "AWS_SECRET_ACCESS_KEY="+c.keys,
				"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.exit {
				t.Fatalf("exit code %d, want %d; output:\n%s", code, c.exit, out)
			}
			for _, want := range c.log {
				if !strings.Contains(string(out), want) {
					t.Errorf("the log lacks %s:\n%s", want, out)
				}
			}
		})
	}
}
