package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// overridePair matches one parameter of parameter_overrides as SAM writes
// it: Name=\"value\" inside one string (the guided deploy), or "Name=value"
// as one item of a list.
var overridePair = regexp.MustCompile(`([A-Za-z0-9]+)=(?:\\"([^"\\]*)\\"|([^"\s\]]*))`)

// deployedParams reads the parameters a guided deploy saved in
// samconfig.toml (parameter_overrides), which name the credentials' ARNs
// and so their kinds; none when the file has none (the repository's own,
// which keeps the deployer's answers out of shared commits).
func deployedParams(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return parseOverrides(string(b)), nil
}

// parseOverrides reads the first parameter_overrides of a samconfig.toml.
func parseOverrides(toml string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(toml, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok || strings.TrimSpace(key) != "parameter_overrides" {
			continue
		}
		for _, m := range overridePair.FindAllStringSubmatch(value, -1) {
			out[m[1]] = m[2] + m[3]
		}
		break
	}
	return out
}
