package schedule_test

import (
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/schedule"
)

func TestRate(t *testing.T) {
	tests := []struct {
		expr string
		want time.Duration
		str  string
	}{
		{"rate(1 minute)", time.Minute, "rate(1 minute)"},
		{"rate(5 minutes)", 5 * time.Minute, "rate(5 minutes)"},
		{"rate(1 hour)", time.Hour, "rate(1 hour)"},
		{"rate(12 hours)", 12 * time.Hour, "rate(12 hours)"},
		{"rate(1 day)", 24 * time.Hour, "rate(1 day)"},
		{"rate(7 days)", 7 * 24 * time.Hour, "rate(7 days)"},
		{"rate(90 minutes)", 90 * time.Minute, "rate(90 minutes)"},
		{" rate( 10  minutes ) ", 10 * time.Minute, "rate(10 minutes)"},
	}
	after := time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := schedule.Parse(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := e.(schedule.Rate)
			if !ok || r.Period != tc.want {
				t.Fatalf("Parse = %#v, want a rate of %s", e, tc.want)
			}
			if got := e.Next(after); !got.Equal(after.Add(tc.want)) {
				t.Errorf("Next(%s) = %s, want one period later", after, got)
			}
			if r.String() != tc.str {
				t.Errorf("String() = %q, want %q", r.String(), tc.str)
			}
		})
	}
	if s := (schedule.Rate{Period: 30 * time.Second}).String(); s != "every 30s" {
		t.Errorf("a 30s rate reads %q", s)
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		expr, why string
	}{
		{"", "want rate"},
		{"rate(5 minutes", "want rate"},
		{"every(5 minutes)", "unknown kind"},
		{"at(2026-11-24T12:00:00)", "one-time"},
		{"rate(1 minutes)", "singular"},
		{"rate(1 days)", "singular"},
		{"rate(5 minute)", "plural"},
		{"rate(2 hour)", "plural"},
		{"rate(0 minutes)", "positive"},
		{"rate(-1 minutes)", "positive"},
		{"rate(+5 minutes)", "positive"},
		{"rate(1.5 hours)", "positive"},
		{"rate(five minutes)", "positive"},
		{"rate(5 seconds)", "unit"},
		{"rate(5 Minutes)", "unit"},
		{"rate(5)", "a value and a unit"},
		{"rate(5 minutes please)", "a value and a unit"},
		{"rate(999999999999 days)", "too long"},
		{"cron(0 7 * * ?)", "6 fields"},
		{"cron(0 7 * * ? * *)", "6 fields"},
		{"cron(0 7 * * * *)", "one of them must be ?"},
		{"cron(0 7 1 * MON *)", "one of them must be ?"},
		{"cron(0 7 ? * ? *)", "both ?"},
		{"cron(60 * * * ? *)", "minutes"},
		{"cron(0 24 * * ? *)", "hours"},
		{"cron(0 0 0 * ? *)", "day-of-month"},
		{"cron(0 0 32 * ? *)", "day-of-month"},
		{"cron(0 0 * 13 ? *)", "month"},
		{"cron(0 0 * FOO ? *)", "JAN-DEC"},
		{"cron(0 0 ? * 0 *)", "1-7 or SUN-SAT"},
		{"cron(0 0 ? * 8 *)", "1-7 or SUN-SAT"},
		{"cron(0 0 * * ? 1969)", "year"},
		{"cron(0 0 * * ? 2200)", "year"},
		{"cron(? 0 * * ? *)", "? stands alone"},
		{"cron(0 0 1,? * ? *)", "? stands alone"},
		{"cron(5-1 * * * ? *)", "backwards"},
		{"cron(*/0 * * * ? *)", "increment"},
		{"cron(*/x * * * ? *)", "increment"},
		{"cron(0 0 1,,2 * ? *)", "day-of-month"},
		{"cron(0 0 ? * MON/2 *)", "no /"},
		{"cron(0 0 ? * 3#1,6#3 *)", "# takes one day"},
		{"cron(0 0 ? * 3#6 *)", "1-5"},
		{"cron(0 0 ? * 8#1 *)", "day-of-week"},
		{"cron(0 0 ? * 1-5L *)", "L follows a single day"},
		{"cron(0 0 L-2 * ? *)", "stand alone"},
		{"cron(0 0 1-5W * ? *)", "W follows a single day"},
		{"cron(0 0 1#2 * ? *)", "# belongs to day-of-week"},
		{"cron(0 0 W * ? *)", "W follows a single day"},
		{"cron(L 0 * * ? *)", "minutes"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := schedule.Parse(tc.expr)
			if err == nil {
				t.Fatalf("Parse = %v, want an error about %q", e, tc.why)
			}
			if !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), tc.expr) {
				t.Errorf("error %q should name the expression and say %q", err, tc.why)
			}
		})
	}
}

// TestCronNext follows each expression from a time through its next due
// times; "" is the zero time, never due again. 2026-11-24 is a Tuesday.
func TestCronNext(t *testing.T) {
	tests := []struct {
		name, expr, after string
		want              []string
	}{
		{"daily", "cron(0 7 * * ? *)", "2026-11-24T12:00:00Z", []string{"2026-11-25T07:00:00Z", "2026-11-26T07:00:00Z"}},
		{"later today", "cron(0 7 * * ? *)", "2026-11-24T06:59:59.9Z", []string{"2026-11-24T07:00:00Z"}},
		{"strictly after", "cron(0 7 * * ? *)", "2026-11-24T07:00:00Z", []string{"2026-11-25T07:00:00Z"}},
		{"after in another zone", "cron(0 7 * * ? *)", "2026-11-24T08:00:00+05:00", []string{"2026-11-24T07:00:00Z"}},
		{"every day, ? in day-of-month", "cron(0 7 ? * * *)", "2026-11-24T12:00:00Z", []string{"2026-11-25T07:00:00Z", "2026-11-26T07:00:00Z"}},
		{"every minute", "cron(* * * * ? *)", "2026-11-24T12:00:30Z", []string{"2026-11-24T12:01:00Z", "2026-11-24T12:02:00Z"}},
		{"star step", "cron(0/15 * * * ? *)", "2026-11-24T12:07:30Z", []string{"2026-11-24T12:15:00Z", "2026-11-24T12:30:00Z", "2026-11-24T12:45:00Z", "2026-11-24T13:00:00Z"}},
		{"value step", "cron(1/10 * * * ? *)", "2026-11-24T12:00:00Z", []string{"2026-11-24T12:01:00Z", "2026-11-24T12:11:00Z", "2026-11-24T12:21:00Z"}},
		{"range step", "cron(0 10-12/2 * * ? *)", "2026-11-24T09:00:00Z", []string{"2026-11-24T10:00:00Z", "2026-11-24T12:00:00Z", "2026-11-25T10:00:00Z"}},
		{"list", "cron(5,35 14 * * ? *)", "2026-11-24T14:20:00Z", []string{"2026-11-24T14:35:00Z", "2026-11-25T14:05:00Z"}},
		{"weekdays by name", "cron(0 18 ? * MON-FRI *)", "2026-11-27T19:00:00Z", []string{"2026-11-30T18:00:00Z", "2026-12-01T18:00:00Z"}},
		{"1 is Sunday", "cron(0 12 ? * 1 *)", "2026-11-24T12:00:00Z", []string{"2026-11-29T12:00:00Z", "2026-12-06T12:00:00Z"}},
		{"SUN is 1", "cron(0 12 ? * SUN *)", "2026-11-24T12:00:00Z", []string{"2026-11-29T12:00:00Z"}},
		{"7 is Saturday", "cron(0 12 ? * 7 *)", "2026-11-24T12:00:00Z", []string{"2026-11-28T12:00:00Z", "2026-12-05T12:00:00Z"}},
		{"2 and 6 are Monday and Friday", "cron(0 12 ? * 2,6 *)", "2026-11-24T12:00:00Z", []string{"2026-11-27T12:00:00Z", "2026-11-30T12:00:00Z"}},
		{"L in day-of-week is Saturday", "cron(0 12 ? * L *)", "2026-11-24T12:00:00Z", []string{"2026-11-28T12:00:00Z"}},
		{"last Friday", "cron(0 10 ? * 6L *)", "2026-11-24T12:00:00Z", []string{"2026-11-27T10:00:00Z", "2026-12-25T10:00:00Z", "2027-01-29T10:00:00Z"}},
		{"second Tuesday", "cron(0 10 ? * 3#2 *)", "2026-11-24T12:00:00Z", []string{"2026-12-08T10:00:00Z", "2027-01-12T10:00:00Z"}},
		{"first Monday by name", "cron(0 9 ? * MON#1 *)", "2026-11-24T12:00:00Z", []string{"2026-12-07T09:00:00Z"}},
		{"first of the month", "cron(0 8 1 * ? *)", "2026-11-24T12:00:00Z", []string{"2026-12-01T08:00:00Z", "2027-01-01T08:00:00Z"}},
		{"last day", "cron(0 0 L * ? *)", "2026-02-01T00:00:00Z", []string{"2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z"}},
		{"last day of a leap February", "cron(0 0 L * ? *)", "2028-02-01T00:00:00Z", []string{"2028-02-29T00:00:00Z"}},
		{"last weekday", "cron(0 9 LW * ? *)", "2026-11-24T12:00:00Z", []string{"2026-11-30T09:00:00Z", "2026-12-31T09:00:00Z", "2027-01-29T09:00:00Z"}},
		{"last weekday before a Saturday month end", "cron(0 9 LW * ? *)", "2026-02-01T00:00:00Z", []string{"2026-02-27T09:00:00Z"}},
		{"nearest weekday to a Saturday 1st", "cron(0 9 1W * ? *)", "2026-07-15T00:00:00Z", []string{"2026-08-03T09:00:00Z", "2026-09-01T09:00:00Z"}},
		{"nearest weekday to a Sunday 15th", "cron(0 9 15W * ? *)", "2026-11-01T00:00:00Z", []string{"2026-11-16T09:00:00Z", "2026-12-15T09:00:00Z"}},
		{"nearest weekday to a 31st", "cron(0 9 31W * ? *)", "2026-11-01T00:00:00Z", []string{"2026-12-31T09:00:00Z", "2027-01-29T09:00:00Z", "2027-03-31T09:00:00Z"}},
		{"the 31st skips short months", "cron(0 0 31 * ? *)", "2026-11-24T12:00:00Z", []string{"2026-12-31T00:00:00Z", "2027-01-31T00:00:00Z", "2027-03-31T00:00:00Z"}},
		{"29 February", "cron(0 0 29 2 ? *)", "2026-11-24T12:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"months by name", "cron(0 12 ? JAN,JUL MON *)", "2026-11-24T12:00:00Z", []string{"2027-01-04T12:00:00Z", "2027-01-11T12:00:00Z"}},
		{"years", "cron(0 0 1 1 ? 2027-2028)", "2026-11-24T12:00:00Z", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", ""}},
		{"a year gone", "cron(0 0 1 1 ? 1970)", "2026-11-24T12:00:00Z", []string{""}},
		{"before 1970", "cron(0 0 1 1 ? *)", "1900-06-01T00:00:00Z", []string{"1970-01-01T00:00:00Z"}},
		{"the last minute AWS can name", "cron(59 23 31 12 ? 2199)", "2199-12-31T23:58:00Z", []string{"2199-12-31T23:59:00Z", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := schedule.Parse(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339Nano, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.want {
				next := e.Next(at)
				got := ""
				if !next.IsZero() {
					got = next.Format(time.RFC3339)
					if next.Location() != time.UTC {
						t.Errorf("Next is in %s, want UTC", next.Location())
					}
				}
				if got != w {
					t.Fatalf("due time %d after %s = %q, want %q", i+1, tc.after, got, w)
				}
				at = next
			}
		})
	}
}

func TestCronString(t *testing.T) {
	e, err := schedule.Parse("cron(0  7 * *  ? *)")
	if err != nil {
		t.Fatal(err)
	}
	if s := e.(*schedule.Cron).String(); s != "cron(0 7 * * ? *)" {
		t.Errorf("String() = %q", s)
	}
}
