package proptest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/crashsim"
)

// storeFiles returns the CommitLog and ConsumeQueue files as the process
// sees them (the markers and the checkpoint are not compared).
func storeFiles(fs *crashsim.FS) map[string][]byte {
	out := make(map[string][]byte)
	for p, b := range fs.Files() {
		if strings.HasPrefix(p, "commitlog/") || strings.HasPrefix(p, "consumequeue/") {
			out[p] = b
		}
	}
	return out
}

func allZero(b []byte) bool { return !slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) }

// sameFiles compares two file sets; with ignoreEmptyCQ, ConsumeQueue files
// holding only zeros count as absent.
func sameFiles(a, b map[string][]byte, ignoreEmptyCQ bool) bool {
	return diffFiles2(a, b, ignoreEmptyCQ) == ""
}

func diffFiles(a, b map[string][]byte) string {
	return diffFiles2(a, b, true) + diffFiles2(a, b, false)
}

func diffFiles2(a, b map[string][]byte, ignoreEmptyCQ bool) string {
	var sb strings.Builder
	skip := func(p string, x []byte) bool {
		return ignoreEmptyCQ && strings.HasPrefix(p, "consumequeue/") && allZero(x)
	}
	if ignoreEmptyCQ {
		a, b = forgetExpiredUnits(a), forgetExpiredUnits(b)
	}
	for _, p := range sortedPaths(a, b) {
		x, inA := a[p]
		y, inB := b[p]
		if inA && skip(p, x) {
			inA = false
		}
		if inB && skip(p, y) {
			inB = false
		}
		switch {
		case inA != inB:
			fmt.Fprintf(&sb, "  %s: only in one (%v / %v)\n", p, inA, inB)
		case inA && !bytes.Equal(x, y):
			i := 0
			for i < len(x) && i < len(y) && x[i] == y[i] {
				i++
			}
			fmt.Fprintf(&sb, "  %s: differs from byte %d\n", p, i)
		}
	}
	return sb.String()
}

func sortedPaths(a, b map[string][]byte) []string {
	var ps []string
	for p := range a {
		ps = append(ps, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// checkpointTimes holds the checkpoint of a crash image (all 0 if none).
type checkpointTimes struct{ physic, logics int64 }

func readCheckpoint(img afero.Fs) checkpointTimes {
	b, err := afero.ReadFile(img, "checkpoint")
	if err != nil || len(b) < 16 {
		return checkpointTimes{}
	}
	return checkpointTimes{int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:]))}
}

// forgetExpiredUnits returns files with every ConsumeQueue unit that points
// below the CommitLog's first file (its record deleted by retention) made
// zero, and blank fillers too: a queue rebuilt from the CommitLog fills
// with blanks where the original still holds units of deleted records.
func forgetExpiredUnits(files map[string][]byte) map[string][]byte {
	clMin := int64(-1)
	for p := range files {
		if name, ok := strings.CutPrefix(p, "commitlog/"); ok {
			var off int64
			if _, err := fmt.Sscanf(name, "%d", &off); err == nil && (clMin < 0 || off < clMin) {
				clMin = off
			}
		}
	}
	if clMin <= 0 {
		return files
	}
	out := make(map[string][]byte, len(files))
	for p, b := range files {
		if !strings.HasPrefix(p, "consumequeue/") {
			out[p] = b
			continue
		}
		c := append([]byte(nil), b...)
		for i := 0; i+20 <= len(c); i += 20 {
			off := int64(binary.BigEndian.Uint64(c[i:]))
			size := int32(binary.BigEndian.Uint32(c[i+8:]))
			if size > 0 && (size == 1<<31-1 || off < clMin) {
				clear(c[i : i+20])
			}
		}
		out[p] = c
	}
	return out
}
