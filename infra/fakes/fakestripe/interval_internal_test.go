package fakestripe

import (
	"testing"
	"time"
)

func TestAddInterval(t *testing.T) {
	at := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 12, 0, 0, 0, time.UTC) }
	tests := []struct {
		anchor time.Time
		rc     priceRecurring
		n      int
		want   time.Time
	}{
		{at(2027, 1, 31), priceRecurring{Interval: intervalMonth, IntervalCount: 1}, 1, at(2027, 2, 28)},
		{at(2027, 1, 31), priceRecurring{Interval: intervalMonth, IntervalCount: 1}, 2, at(2027, 3, 31)},
		{at(2027, 1, 31), priceRecurring{Interval: intervalMonth, IntervalCount: 1}, 3, at(2027, 4, 30)},
		{at(2028, 1, 31), priceRecurring{Interval: intervalMonth, IntervalCount: 1}, 1, at(2028, 2, 29)},
		{at(2027, 11, 15), priceRecurring{Interval: intervalMonth, IntervalCount: 3}, 1, at(2028, 2, 15)},
		{at(2028, 2, 29), priceRecurring{Interval: intervalYear, IntervalCount: 1}, 1, at(2029, 2, 28)},
		{at(2028, 2, 29), priceRecurring{Interval: intervalYear, IntervalCount: 1}, 4, at(2032, 2, 29)},
		{at(2027, 12, 30), priceRecurring{Interval: intervalWeek, IntervalCount: 1}, 1, at(2028, 1, 6)},
		{at(2027, 12, 31), priceRecurring{Interval: intervalDay, IntervalCount: 2}, 1, at(2028, 1, 2)},
	}
	for _, tt := range tests {
		if got := addInterval(tt.anchor, tt.rc, tt.n); !got.Equal(tt.want) {
			t.Errorf("%s + %d × %d %s = %s, want %s", tt.anchor.Format(time.DateOnly), tt.n, tt.rc.IntervalCount, tt.rc.Interval, got.Format(time.DateOnly), tt.want.Format(time.DateOnly))
		}
	}
}
