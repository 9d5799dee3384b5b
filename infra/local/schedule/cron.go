package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Cron is a cron expression: the minutes, in UTC, that its six fields
// match. Day-of-week counts as AWS does, 1 (SUN) to 7 (SAT); exactly one of
// day-of-month and day-of-week is ?, and the other chooses the days.
type Cron struct {
	expr   string
	minute set
	hour   set
	month  set
	year   set
	dom    *dayOfMonth // nil when day-of-month is ?
	dow    *dayOfWeek  // nil when day-of-week is ?
}

// The years a cron expression can name.
const (
	firstYear = 1970
	lastYear  = 2199
)

// set holds the values a field matches: set[v] for value v.
type set []bool

// field is one of the cron fields and the values it takes.
type field struct {
	name     string
	min, max int
	names    map[string]int
	slash    bool // whether / (increments) is allowed
}

var (
	minutes     = field{name: "minutes", min: 0, max: 59, slash: true}
	hours       = field{name: "hours", min: 0, max: 23, slash: true}
	daysOfMonth = field{name: "day-of-month", min: 1, max: 31, slash: true}
	months      = field{name: "month", min: 1, max: 12, slash: true, names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}}
	// AWS's table of wildcards gives day-of-week no /.
	daysOfWeek = field{name: "day-of-week", min: 1, max: 7, names: map[string]int{
		"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7,
	}}
	years = field{name: "year", min: firstYear, max: lastYear, slash: true}
)

// parseCron reads the six fields of cron(...).
func parseCron(body string) (*Cron, error) {
	f := strings.Fields(body)
	if len(f) != 6 {
		return nil, fmt.Errorf("cron takes 6 fields (minutes hours day-of-month month day-of-week year), got %d", len(f))
	}
	c := &Cron{expr: "cron(" + strings.Join(f, " ") + ")"}
	var err error
	for _, p := range []struct {
		f    field
		text string
		into *set
	}{{minutes, f[0], &c.minute}, {hours, f[1], &c.hour}, {months, f[3], &c.month}, {years, f[5], &c.year}} {
		if *p.into, err = p.f.parse(p.text); err != nil {
			return nil, err
		}
	}
	switch dom, dow := f[2], f[4]; {
	case dom == "?" && dow == "?":
		return nil, errors.New("day-of-month and day-of-week are both ?: one of them must choose the days")
	case dom != "?" && dow != "?":
		return nil, fmt.Errorf("day-of-month %q and day-of-week %q: one of them must be ? (AWS takes no value, not even *, in both)", dom, dow)
	case dom == "?":
		c.dow, err = parseDayOfWeek(dow)
	default:
		c.dom, err = parseDayOfMonth(dom)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// String is the expression as written, its fields one space apart.
func (c *Cron) String() string { return c.expr }

// Next is the first matching minute after after, or the zero time when no
// minute up to the end of 2199 matches.
func (c *Cron) Next(after time.Time) time.Time {
	t := after.UTC().Truncate(time.Minute).Add(time.Minute)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	from := t.Hour()*60 + t.Minute() // the first minute of the day still to come
	for day.Year() <= lastYear {
		y, m, _ := day.Date()
		switch {
		case y < firstYear:
			day, from = time.Date(firstYear, 1, 1, 0, 0, 0, 0, time.UTC), 0
			continue
		case !c.year[y]:
			day, from = time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC), 0
			continue
		case !c.month[m]:
			day, from = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC), 0
			continue
		case c.day(day):
			if at, ok := c.firstMinute(from); ok {
				return day.Add(time.Duration(at) * time.Minute)
			}
		}
		day, from = day.AddDate(0, 0, 1), 0
	}
	return time.Time{}
}

// day reports whether the day-of-month or the day-of-week field matches day.
func (c *Cron) day(day time.Time) bool {
	if c.dom != nil {
		return c.dom.matches(day)
	}
	return c.dow.matches(day)
}

// firstMinute is the first minute of a day, from from on, that the hours
// and minutes fields match.
func (c *Cron) firstMinute(from int) (int, bool) {
	for m := from; m < 24*60; m++ {
		if c.hour[m/60] && c.minute[m%60] {
			return m, true
		}
	}
	return 0, false
}

// parse reads a field of values: *, a value, a range a-b, each optionally
// with an increment /n (a/n runs from a to the field's end), in a list
// separated by commas.
func (f field) parse(text string) (set, error) {
	out := make(set, f.max+1)
	for item := range strings.SplitSeq(text, ",") {
		if err := f.item(item, out); err != nil {
			return nil, fmt.Errorf("%s %q: %w", f.name, text, err)
		}
	}
	return out, nil
}

func (f field) item(item string, out set) error {
	span, inc, stepped := strings.Cut(item, "/")
	if stepped && !f.slash {
		return fmt.Errorf("%s takes no / in AWS's grammar", f.name)
	}
	lo, hi := f.min, f.max
	var err error
	switch a, b, isRange := strings.Cut(span, "-"); {
	case span == "*":
	case isRange:
		if lo, err = f.value(a); err != nil {
			return err
		}
		if hi, err = f.value(b); err != nil {
			return err
		}
		if lo > hi {
			return fmt.Errorf("range %s runs backwards", span)
		}
	default:
		if lo, err = f.value(span); err != nil {
			return err
		}
		if !stepped {
			hi = lo
		}
	}
	step := 1
	if stepped {
		if step, err = number(inc); err != nil || step < 1 {
			return fmt.Errorf("increment %q is not a positive whole number", inc)
		}
	}
	for v := lo; v <= hi; v += step {
		out[v] = true
	}
	return nil
}

// value reads one value: a number in the field's range or, for months and
// days of the week, a name such as JAN or MON.
func (f field) value(s string) (int, error) {
	if n, ok := f.names[strings.ToUpper(s)]; ok {
		return n, nil
	}
	if s == "?" {
		return 0, errors.New("? stands alone, and only in day-of-month or day-of-week")
	}
	n, err := number(s)
	if err != nil || n < f.min || n > f.max {
		return 0, fmt.Errorf("%q is not a %s value (%d-%d%s)", s, f.name, f.min, f.max, f.nameRange())
	}
	return n, nil
}

func (f field) nameRange() string {
	switch f.name {
	case months.name:
		return " or JAN-DEC"
	case daysOfWeek.name:
		return " or SUN-SAT"
	}
	return ""
}

// dayOfMonth is a day-of-month field: a set of days, or one of L (the last
// day of the month), LW (the last weekday of the month) and nW (the weekday
// nearest day n).
type dayOfMonth struct {
	days        set
	last        bool
	lastWeekday bool
	nearest     int // n of nW; 0 unless used
}

func parseDayOfMonth(text string) (*dayOfMonth, error) {
	u := strings.ToUpper(text)
	switch {
	case u == "L":
		return &dayOfMonth{last: true}, nil
	case u == "LW":
		return &dayOfMonth{lastWeekday: true}, nil
	case strings.HasSuffix(u, "W"):
		n, err := daysOfMonth.value(strings.TrimSuffix(u, "W"))
		if err != nil {
			return nil, fmt.Errorf("day-of-month %q: W follows a single day, as in 15W: %w", text, err)
		}
		return &dayOfMonth{nearest: n}, nil
	case strings.ContainsAny(u, "LW"):
		return nil, fmt.Errorf("day-of-month %q: L and W stand alone (L, LW, or a day and W such as 15W)", text)
	case strings.Contains(u, "#"):
		return nil, fmt.Errorf("day-of-month %q: # belongs to day-of-week", text)
	}
	days, err := daysOfMonth.parse(text)
	if err != nil {
		return nil, err
	}
	return &dayOfMonth{days: days}, nil
}

func (d *dayOfMonth) matches(day time.Time) bool {
	y, m, n := day.Date()
	last := lastDay(y, m)
	switch {
	case d.last:
		return n == last
	case d.lastWeekday:
		return n == nearestWeekday(y, m, last)
	case d.nearest > 0:
		return d.nearest <= last && n == nearestWeekday(y, m, d.nearest)
	}
	return d.days[n]
}

// nearestWeekday is the Monday to Friday nearest day n of the month, never
// in another month: a Saturday moves to the Friday before (to the Monday
// after on the 1st), a Sunday to the Monday after (to the Friday before on
// the month's last day).
func nearestWeekday(y int, m time.Month, n int) int {
	switch time.Date(y, m, n, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		if n == 1 {
			return 3
		}
		return n - 1
	case time.Sunday:
		if n == lastDay(y, m) {
			return n - 2
		}
		return n + 1
	}
	return n
}

// lastDay is the number of days in the month.
func lastDay(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dayOfWeek is a day-of-week field, 1 (SUN) to 7 (SAT): a set of days, L
// (the week's last day, SAT), nL (the month's last day n) or n#k (the
// month's k-th day n).
type dayOfWeek struct {
	days     set
	lastOf   int // n of nL; 0 unless used
	nth, kth int // n and k of n#k; 0 unless used
}

func parseDayOfWeek(text string) (*dayOfWeek, error) {
	u := strings.ToUpper(text)
	switch {
	case strings.Contains(u, "#"):
		if strings.ContainsAny(u, ",-/*") {
			return nil, fmt.Errorf("day-of-week %q: # takes one day and nothing else in the field (AWS refuses 3#1,6#3)", text)
		}
		d, k, _ := strings.Cut(u, "#")
		n, err := daysOfWeek.value(d)
		if err != nil {
			return nil, fmt.Errorf("day-of-week %q: %w", text, err)
		}
		kth, err := number(k)
		if err != nil || kth < 1 || kth > 5 {
			return nil, fmt.Errorf("day-of-week %q: the instance after # is 1-5", text)
		}
		return &dayOfWeek{nth: n, kth: kth}, nil
	case u == "L":
		days := make(set, daysOfWeek.max+1)
		days[7] = true
		return &dayOfWeek{days: days}, nil
	case strings.HasSuffix(u, "L"):
		n, err := daysOfWeek.value(strings.TrimSuffix(u, "L"))
		if err != nil {
			return nil, fmt.Errorf("day-of-week %q: L follows a single day, as in 6L (the month's last Friday): %w", text, err)
		}
		return &dayOfWeek{lastOf: n}, nil
	}
	days, err := daysOfWeek.parse(text)
	if err != nil {
		return nil, err
	}
	return &dayOfWeek{days: days}, nil
}

func (d *dayOfWeek) matches(day time.Time) bool {
	wd := int(day.Weekday()) + 1 // AWS counts from SUN = 1
	y, m, n := day.Date()
	switch {
	case d.lastOf > 0:
		return wd == d.lastOf && n+7 > lastDay(y, m)
	case d.nth > 0:
		return wd == d.nth && (n-1)/7+1 == d.kth
	}
	return d.days[wd]
}
