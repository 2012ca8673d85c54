//go:build linux

package engine

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/rocketstore/rocketstore/backend/mmap"
)

// TestConsumeQueueFileNoReadAround checks that a new ConsumeQueue file's
// mapping carries MADV_RANDOM ("rr" in /proc/self/smaps), which keeps the
// read-around of its first write fault off the dispatcher's path, and that
// a CommitLog-style queue (no hint) does not.
func TestConsumeQueueFileNoReadAround(t *testing.T) {
	fs, err := mmap.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cq := newConsumeQueue(fs, "consumequeue", "T", 0, 1000)
	if ok, err := cq.putMessagePositionInfo(0, 100, 0, 0); !ok || err != nil {
		t.Fatalf("put unit: %v %v", ok, err)
	}
	defer cq.q.shutdown()
	if flags := vmFlags(t, cq.q.lastFile()); !strings.Contains(" "+flags+" ", " rr ") {
		t.Errorf("ConsumeQueue mapping VmFlags %q: want rr (MADV_RANDOM)", flags)
	}
	plain := newMappedFileQueue(fs, "commitlog", 4096*4)
	mf, err := plain.getLastMappedFile(0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.shutdown()
	if flags := vmFlags(t, mf); strings.Contains(" "+flags+" ", " rr ") {
		t.Errorf("plain queue mapping VmFlags %q: want no rr", flags)
	}
}

// vmFlags returns the VmFlags line of the mapping holding mf's first byte.
func vmFlags(t *testing.T, mf *mappedFile) string {
	t.Helper()
	addr := uint64(uintptr(unsafe.Pointer(&mf.seg.View(0, 1)[0])))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if from, to, ok := mappingRange(line); ok {
			in = addr >= from && addr < to
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("mapping of %#x not found in /proc/self/smaps", addr)
	return ""
}

// mappingRange parses the "from-to perms ..." header line of an smaps entry.
func mappingRange(line string) (uint64, uint64, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || strings.HasSuffix(f[0], ":") {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(f[0], "-")
	if !ok {
		return 0, 0, false
	}
	from, err1 := strconv.ParseUint(a, 16, 64)
	to, err2 := strconv.ParseUint(b, 16, 64)
	return from, to, err1 == nil && err2 == nil
}
