package queue

import (
	"testing"
	"time"
)

func TestDelaySecondsRoundUpWithinTheCap(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int32
	}{
		{-time.Second, 0},
		{0, 0},
		{time.Millisecond, 1},
		{300 * time.Millisecond, 1},
		{time.Second, 1},
		{1500 * time.Millisecond, 2},
		{14*time.Minute + 59*time.Second + time.Millisecond, 900},
		{2 * time.Hour, 900},
	} {
		if got := delaySeconds(tc.d); got != tc.want {
			t.Errorf("delaySeconds(%s) = %d, want %d", tc.d, got, tc.want)
		}
	}
}
