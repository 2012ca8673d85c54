// Package units renders byte counts for people, the one way the command
// line, the admin replies and the offline tools all write them.
package units

import (
	"fmt"
	"strings"
)

// Bytes renders b in binary units as RocketMQ's
// MixAll.humanReadableByteCount(bytes, false) does: "512 B", "1.5 KiB",
// "64.0 MiB", "1.0 GiB". mqadmin prints broker sizes this way, and the
// rest of rocketstore's output follows it.
func Bytes(b uint64) string {
	if b < 1024 {
		return fmt.Sprintf("%d B", b)
	}
	const units = "KMGTPE"
	v, i := float64(b), -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %siB", v, strings.TrimSpace(string(units[i])))
}

// Size is Bytes of a signed count; a negative one (never a size) is
// printed as it is.
func Size(n int64) string {
	if n < 0 {
		return fmt.Sprintf("%d B", n)
	}
	return Bytes(uint64(n))
}
