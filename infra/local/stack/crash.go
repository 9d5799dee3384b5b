package stack

import (
	"fmt"

	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/shared/crashpoint"
)

// KillAt arms a function's kill plan: the next times processes of the
// function (by logical id) that reach point are killed there with SIGKILL,
// as a host crash would kill them, and then hears of each kill once the
// process has exited (runtimeapi.Function.KillAt). times 0 disarms the
// point.
func (s *Stack) KillAt(function string, point crashpoint.Point, times int, then func(runtimeapi.Kill)) error {
	f, ok := s.invokers[function].(*runtimeapi.Function)
	if !ok {
		return fmt.Errorf("kill at %s: %q is not a function of the stack", point, function)
	}
	f.KillAt(string(point), times, then)
	return nil
}

// Killed is how many processes of the function were killed at point.
func (s *Stack) Killed(function string, point crashpoint.Point) int {
	f, ok := s.invokers[function].(*runtimeapi.Function)
	if !ok {
		return 0
	}
	return f.Killed(string(point))
}
