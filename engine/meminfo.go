package engine

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// physicalMemory returns MemTotal from /proc/meminfo, or 8 GiB when it
// cannot be read. Only getMessage's in-memory heuristic uses it.
func physicalMemory() int64 {
	const fallback = 8 << 30
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return fallback
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemTotal:" {
			if kb, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return fallback
}
