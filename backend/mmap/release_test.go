package mmap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/rocketstore/rocketstore/backend"
)

// mappedKiB returns the resident size of the mapping that starts at addr,
// from /proc/self/smaps (pages this process has mapped, not the page
// cache's).
func mappedKiB(t *testing.T, addr uintptr) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	head := fmt.Sprintf("%x-", addr)
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, head) {
			in = true
		} else if in && strings.HasPrefix(line, "Rss:") {
			kib, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatalf("smaps: %q", line)
			}
			return kib
		}
	}
	t.Fatalf("smaps: no mapping at %#x", addr)
	return 0
}

// TestReleasePagesKeepsContent: ReleasePages unmaps exactly the whole pages
// inside its range (the mapping's resident size drops by them) and every
// byte reads back the same through the mapping and through the file, so
// the dirty pages stay in the page cache for the next Sync.
func TestReleasePagesKeepsContent(t *testing.T) {
	fsys := newFS(t)
	const pages = 8
	s := mustCreate(t, fsys, "seg", pages*pageSize).(*segment)
	want := make([]byte, pages*pageSize)
	for i := range want {
		want[i] = byte(i*7 + i/4096)
	}
	if _, err := s.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	addr := uintptr(unsafe.Pointer(&s.data[0]))
	before := mappedKiB(t, addr)
	if before != pages*int(pageSize)/1024 {
		t.Fatalf("%d KiB mapped after writing every page, want %d", before, pages*pageSize/1024)
	}
	// Pages 1-4 lie wholly inside; pages 0 and 5 only in part.
	if err := s.ReleasePages(100, 5*pageSize); err != nil {
		t.Fatal(err)
	}
	if got, want := mappedKiB(t, addr), before-4*int(pageSize)/1024; got != want {
		t.Errorf("%d KiB mapped after releasing 4 whole pages, want %d", got, want)
	}
	if err := s.ReleasePages(pageSize+1, pageSize); err != nil { // no whole page
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := s.ReadFile(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || !bytes.Equal(s.View(0, int64(len(want))), want) {
		t.Fatal("content changed by ReleasePages")
	}
	if err := s.Sync(0, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleasePages(pages*pageSize-1, 2); !errors.Is(err, backend.ErrRange) {
		t.Errorf("release past the end: %v, want ErrRange", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleasePages(0, pageSize); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("release after close: %v, want ErrClosed", err)
	}
}
