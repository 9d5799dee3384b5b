// Package samconfig reads what `sam deploy` reads of samconfig.toml, for
// the tools `make deploy` and `make cost` run beside it: the default
// environment's stack, region, artifact bucket and parameter overrides, as
// a guided deploy saved them.
package samconfig

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// Config is the default environment's settings, the deploy section's over
// the global one's, as SAM merges them.
type Config struct {
	StackName string
	Region    string
	// S3Bucket is the artifact bucket the deployer named; empty when SAM
	// manages its own (resolve_s3).
	S3Bucket string
	// Parameters are the template parameters the deploy overrides, by name.
	Parameters map[string]string
}

// section is one command's table: [default.<command>.parameters].
type section struct {
	StackName          string `toml:"stack_name"`
	Region             string `toml:"region"`
	S3Bucket           string `toml:"s3_bucket"`
	ParameterOverrides any    `toml:"parameter_overrides"`
}

type file struct {
	Default map[string]struct {
		Parameters section `toml:"parameters"`
	} `toml:"default"`
}

// Read reads the file at path; a missing file is an empty Config (the
// repository's own file holds no deployer's answers until a guided deploy).
func Read(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{Parameters: map[string]string{}}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("read %s: %w", path, err)
	}
	c, err := Parse(string(b))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads a samconfig.toml's text.
func Parse(text string) (Config, error) {
	var f file
	if _, err := toml.Decode(text, &f); err != nil {
		return Config{}, err
	}
	c := Config{Parameters: map[string]string{}}
	var overrides any
	from := ""
	// SAM merges the sections setting by setting: the deploy section's
	// parameter_overrides, when it has one, replaces the global one whole.
	for _, command := range []string{"global", "deploy"} {
		s := f.Default[command].Parameters
		c.StackName = or(s.StackName, c.StackName)
		c.Region = or(s.Region, c.Region)
		c.S3Bucket = or(s.S3Bucket, c.S3Bucket)
		if s.ParameterOverrides != nil {
			overrides, from = s.ParameterOverrides, command
		}
	}
	params, err := parseOverrides(overrides)
	if err != nil {
		return Config{}, fmt.Errorf("default.%s.parameters.parameter_overrides: %w", from, err)
	}
	c.Parameters = params
	return c, nil
}

func or(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// overridePair matches one Name=value of parameter_overrides, its value
// bare or in double quotes (the guided deploy quotes every one).
var overridePair = regexp.MustCompile(`^([A-Za-z0-9]+)=(?:"([^"]*)"|(\S*))`)

// parseOverrides reads parameter_overrides in either of SAM's forms: one
// string of space-separated pairs, or a list of pairs.
func parseOverrides(v any) (map[string]string, error) {
	out := map[string]string{}
	var pairs []string
	switch v := v.(type) {
	case nil:
		return out, nil
	case string:
		pairs = []string{v}
	case []any:
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("an item is %T, not a string", item)
			}
			pairs = append(pairs, s)
		}
	default:
		return nil, fmt.Errorf("a %T, not a string or a list", v)
	}
	for _, s := range pairs {
		for s = strings.TrimLeft(s, " \t\n"); s != ""; s = strings.TrimLeft(s, " \t\n") {
			m := overridePair.FindStringSubmatch(s)
			if m == nil {
				return nil, fmt.Errorf("%q is not Name=value", clip(s))
			}
			if m[1] == "ParameterKey" {
				return nil, fmt.Errorf("%q: write each override as Name=value, not ParameterKey=…,ParameterValue=…", clip(s))
			}
			out[m[1]] = m[2] + m[3]
			s = s[len(m[0]):]
		}
	}
	return out, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
