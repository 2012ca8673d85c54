//go:build linux

package engine

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/rocketstore/rocketstore/backend/mmap"
)

// TestAdviseHugePagesRange checks on the mmap backend that the hint covers
// the requested range rounded out to whole huge pages: the kernel then
// lists that range of the mapping as its own VMA with the "hg" flag.
func TestAdviseHugePagesRange(t *testing.T) {
	fs, err := mmap.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seg, err := fs.Create("seg", 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if !adviseHugePages(seg, 3<<20, 1<<20+4096) { // [3 MiB, 4 MiB+4 KiB)
		t.Fatal("hint refused")
	}
	base := uintptr(unsafe.Pointer(&seg.View(0, 1)[0]))
	flags := vmaFlags(t, base+2<<20)
	if flags.end != base+6<<20 || !strings.Contains(flags.flags, " hg") {
		t.Fatalf("VMA from 2 MiB: ends at +%d MiB, flags %q; want to end at +6 MiB with hg",
			(flags.end-base)>>20, flags.flags)
	}
	if f := vmaFlags(t, base); f.end != base+2<<20 || strings.Contains(f.flags, " hg") {
		t.Fatalf("VMA from 0: ends at +%d MiB, flags %q; want +2 MiB without hg", (f.end-base)>>20, f.flags)
	}
}

type vma struct {
	end   uintptr
	flags string
}

// vmaFlags returns the end and VmFlags of this process's VMA that starts
// at start.
func vmaFlags(t *testing.T, start uintptr) vma {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var cur *vma
	for sc.Scan() {
		line := sc.Text()
		var s, e uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &s, &e); n == 2 && strings.Contains(line[:strings.IndexByte(line, ' ')], "-") {
			cur = nil
			if s == start {
				cur = &vma{end: e}
			}
			continue
		}
		if cur != nil && strings.HasPrefix(line, "VmFlags:") {
			cur.flags = line + " "
			return *cur
		}
	}
	t.Fatalf("no VMA starts at %#x", start)
	return vma{}
}

// TestPreparedFirstWindowHuge checks that a file prepared with firstHuge
// has its first window advised huge pages, and one prepared without has
// not.
func TestPreparedFirstWindowHuge(t *testing.T) {
	for _, huge := range []bool{true, false} {
		fs, err := mmap.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		q := newMappedFileQueue(fs, "commitlog", 64<<20)
		a := newAllocator(q)
		a.prepare(0, huge)
		mf := a.take(0)
		if mf == nil {
			t.Fatal("nothing prepared")
		}
		a.stop() // waits for the first window's population
		base := uintptr(unsafe.Pointer(&mf.seg.View(0, 1)[0]))
		v := vmaFlags(t, base)
		if got := strings.Contains(v.flags, " hg"); got != huge || (huge && v.end != base+prefaultWindow) {
			t.Errorf("firstHuge %v: first VMA ends at +%d MiB, hg %v", huge, (v.end-base)>>20, got)
		}
		mf.shutdown()
	}
}
