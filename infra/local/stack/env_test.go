package stack

import (
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

// Overrides must name the template's functions: a misspelt id would leave
// a test running with the template's windows instead of its own.
func TestEnvOverridesNameFunctions(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	fns := tmpl.Functions()
	if err := checkEnv(map[string]map[string]string{"GeneratorFunction": {"GEMINI_CIRCUIT_OPEN_FOR": "1s"}}, fns); err != nil {
		t.Errorf("a function's overrides refused: %v", err)
	}
	err = checkEnv(map[string]map[string]string{"GeneratorFuncton": {"GEMINI_CIRCUIT_OPEN_FOR": "1s"}}, fns)
	if err == nil || !strings.Contains(err.Error(), `"GeneratorFuncton"`) {
		t.Errorf("overrides for no function: err = %v, want one naming it", err)
	}
}
