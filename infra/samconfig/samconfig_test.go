package samconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	arns := map[string]string{
		"BaseUrl":         "https://42sisters.ai",
		"HashPepperArn":   "arn:aws:ssm:ca-central-1:123456789012:parameter/oracle/pepper",
		"GeminiApiKeyArn": "arn:aws:secretsmanager:ca-central-1:123456789012:secret:oracle/gemini-AbCdEf",
	}
	for _, tc := range []struct {
		name, toml string
		want       Config
	}{
		{"one string, as the guided deploy writes it", `version = 0.1
[default.global.parameters]
stack_name = "oracle"
[default.deploy.parameters]
region = "ca-central-1"
resolve_s3 = true
parameter_overrides = "BaseUrl=\"https://42sisters.ai\" HashPepperArn=\"arn:aws:ssm:ca-central-1:123456789012:parameter/oracle/pepper\" GeminiApiKeyArn=\"arn:aws:secretsmanager:ca-central-1:123456789012:secret:oracle/gemini-AbCdEf\""
`, Config{StackName: "oracle", Region: "ca-central-1", Parameters: arns}},
		{"a list, and a bucket of the deployer's", `[default.deploy.parameters]
stack_name = "oracle-staging"
s3_bucket = "artifacts-of-mine"
parameter_overrides = ["BaseUrl=https://42sisters.ai", "HashPepperArn=arn:aws:ssm:ca-central-1:123456789012:parameter/oracle/pepper", "GeminiApiKeyArn=arn:aws:secretsmanager:ca-central-1:123456789012:secret:oracle/gemini-AbCdEf"]
`, Config{StackName: "oracle-staging", S3Bucket: "artifacts-of-mine", Parameters: arns}},
		{"the deploy section over the global one, its overrides whole", `[default.global.parameters]
stack_name = "oracle"
region = "us-east-1"
parameter_overrides = "GeminiModel=\"gemini-2.5-pro\" BaseUrl=\"https://staging.42sisters.ai\""
[default.deploy.parameters]
stack_name = "oracle-prod"
parameter_overrides = "BaseUrl=\"https://42sisters.ai\""
`, Config{StackName: "oracle-prod", Region: "us-east-1", Parameters: map[string]string{"BaseUrl": "https://42sisters.ai"}}},
		{"the global overrides when the deploy section has none", `[default.global.parameters]
parameter_overrides = "GeminiModel=\"gemini-2.5-pro\""
[default.deploy.parameters]
stack_name = "oracle"
`, Config{StackName: "oracle", Parameters: map[string]string{"GeminiModel": "gemini-2.5-pro"}}},
		{"no overrides", `[default.global.parameters]
stack_name = "oracle"
`, Config{StackName: "oracle", Parameters: map[string]string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.toml)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseRefusesWhatSAMWouldNotRead(t *testing.T) {
	for _, text := range []string{
		`[default.deploy.parameters` + "\n",
		`[default.deploy.parameters]` + "\nparameter_overrides = 3\n",
		`[default.deploy.parameters]` + "\nparameter_overrides = [3]\n",
		`[default.deploy.parameters]` + "\nparameter_overrides = \"=nameless\"\n",
		`[default.deploy.parameters]` + "\nparameter_overrides = [\"ParameterKey=GeminiModel,ParameterValue=gemini-2.5-pro\"]\n",
	} {
		if c, err := Parse(text); err == nil {
			t.Errorf("%q read as %+v", text, c)
		}
	}
}

// The repository's own file, with no deployer's answers, reads; a missing
// one is empty.
func TestRead(t *testing.T) {
	c, err := Read("../../samconfig.toml")
	if err != nil || c.StackName != "oracle" || len(c.Parameters) != 0 {
		t.Errorf("the repository's samconfig.toml: %+v, %v", c, err)
	}
	if c, err := Read(filepath.Join(t.TempDir(), "samconfig.toml")); err != nil || c.Parameters == nil {
		t.Errorf("a missing file: %+v, %v", c, err)
	}
	bad := filepath.Join(t.TempDir(), "samconfig.toml")
	if err := os.WriteFile(bad, []byte("[default"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(bad); err == nil {
		t.Error("a broken file was read")
	}
}
