package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultLevels is RocketMQ's messageDelayLevel.
const DefaultLevels = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// ErrBadLevels reports an unparsable messageDelayLevel string.
var ErrBadLevels = errors.New("schedule: bad delay levels")

// ParseLevels parses RocketMQ's messageDelayLevel format: space-separated
// durations with unit s, m, h or d (level = position + 1). "ms" is
// accepted too, for tests.
func ParseLevels(s string) ([]time.Duration, error) {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		ok := false
		for _, u := range units {
			if n, found := strings.CutSuffix(f, u.suffix); found {
				v, err := strconv.ParseInt(n, 10, 64)
				if err != nil || v <= 0 {
					return nil, fmt.Errorf("%w: %q", ErrBadLevels, f)
				}
				out, ok = append(out, time.Duration(v)*u.d), true
				break
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w: %q has no unit s, m, h or d", ErrBadLevels, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no level in %q", ErrBadLevels, s)
	}
	return out, nil
}
