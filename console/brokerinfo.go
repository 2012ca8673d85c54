package console

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	runtimeRE  = regexp.MustCompile(`^\[\s*(\d+) days, (\d+) hours, (\d+) minutes, (\d+) seconds\s*\]$`)
	capacityRE = regexp.MustCompile(`^Total : (.+), Free : (.+)\.$`)
)

// uptimeText reads a broker's "runtime" ("[ 0 days, 1 hours, 2 minutes,
// 3 seconds ]", as RocketMQ brokers write it) as "1h 2m 3s"; anything
// else is shown as the broker wrote it.
func uptimeText(s string) string {
	m := runtimeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return s
	}
	var parts []string
	for i, unit := range []string{"d", "h", "m", "s"} {
		if n, _ := strconv.Atoi(m[i+1]); n > 0 || (unit == "s" && len(parts) == 0) {
			parts = append(parts, fmt.Sprintf("%d%s", n, unit))
		}
	}
	return strings.Join(parts, " ")
}

// diskText reads a broker's "commitLogDirCapacity" ("Total : 100.0 GiB,
// Free : 40.0 GiB.") as "40.0 GiB free of 100.0 GiB"; anything else is
// shown as the broker wrote it.
func diskText(s string) string {
	m := capacityRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return s
	}
	return m[2] + " free of " + m[1]
}
