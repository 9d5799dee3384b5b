// Package schedule reads EventBridge schedule expressions (rate(...) and
// cron(...), in UTC, with AWS's grammar) and fires jobs at their due times on
// a clock that tests move by hand.
package schedule

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Expression says when a schedule is due.
type Expression interface {
	// Next is the first due time strictly after after, or the zero time
	// when the expression is never due again.
	Next(after time.Time) time.Time
}

// Parse reads an EventBridge schedule expression: rate(value unit) or
// cron(minutes hours day-of-month month day-of-week year). What AWS would
// refuse, and what this package does not implement, is an error rather than
// a schedule that fires at other times than EventBridge's.
func Parse(expr string) (Expression, error) {
	kind, body, ok := strings.Cut(strings.TrimSpace(expr), "(")
	if !ok || !strings.HasSuffix(body, ")") {
		return nil, fmt.Errorf("schedule %q: want rate(value unit) or cron(6 fields)", expr)
	}
	body = strings.TrimSuffix(body, ")")
	var (
		e   Expression
		err error
	)
	switch kind {
	case "rate":
		e, err = parseRate(body)
	case "cron":
		e, err = parseCron(body)
	case "at":
		err = errors.New("one-time at(...) schedules are not supported")
	default:
		err = fmt.Errorf("unknown kind %q: want rate(value unit) or cron(6 fields)", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", expr, err)
	}
	return e, nil
}

// Rate is due every Period, the first time one Period after it starts (as a
// new EventBridge rule with a rate expression is).
type Rate struct {
	Period time.Duration
}

// Next is one period after after.
func (r Rate) Next(after time.Time) time.Time { return after.Add(r.Period) }

// String is the rate as EventBridge writes it where it can be.
func (r Rate) String() string {
	for _, u := range rateUnits {
		if r.Period >= u.d && r.Period%u.d == 0 {
			n := int64(r.Period / u.d)
			if n == 1 {
				return "rate(1 " + u.one + ")"
			}
			return fmt.Sprintf("rate(%d %s)", n, u.many)
		}
	}
	return "every " + r.Period.String()
}

var rateUnits = []struct {
	one, many string
	d         time.Duration
}{
	{"day", "days", 24 * time.Hour},
	{"hour", "hours", time.Hour},
	{"minute", "minutes", time.Minute},
}

// parseRate reads "value unit": a positive whole number and minute(s),
// hour(s) or day(s), singular exactly when the value is 1.
func parseRate(body string) (Rate, error) {
	f := strings.Fields(body)
	if len(f) != 2 {
		return Rate{}, errors.New("rate takes a value and a unit, e.g. rate(5 minutes)")
	}
	n, err := number(f[0])
	if err != nil || n < 1 {
		return Rate{}, fmt.Errorf("rate value %q is not a positive whole number", f[0])
	}
	for _, u := range rateUnits {
		switch f[1] {
		case u.one, u.many:
		default:
			continue
		}
		if n == 1 && f[1] != u.one {
			return Rate{}, fmt.Errorf("a rate of 1 takes the singular unit: rate(1 %s)", u.one)
		}
		if n > 1 && f[1] != u.many {
			return Rate{}, fmt.Errorf("a rate above 1 takes the plural unit: rate(%d %s)", n, u.many)
		}
		if int64(n) > math.MaxInt64/int64(u.d) {
			return Rate{}, fmt.Errorf("rate(%s %s) is too long", f[0], f[1])
		}
		return Rate{Period: time.Duration(n) * u.d}, nil
	}
	return Rate{}, fmt.Errorf("rate unit %q: want minute(s), hour(s) or day(s)", f[1])
}

// number reads a whole number written in digits only.
func number(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return strconv.Atoi(s)
}
