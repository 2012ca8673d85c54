package snapshot_test

import (
	"errors"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/snapshot"
)

// A Pwrite to a file of the base lands in the overlay's copy, in order
// across its pieces, and leaves the base as it was; out of range it
// writes nothing.
func TestPwriteOnBaseFileStaysInOverlay(t *testing.T) {
	base := memfs.New(nil)
	seg, err := base.Create("f", 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seg.WriteAt([]byte("0123456789abcdef"), 0); err != nil {
		t.Fatal(err)
	}
	if err := seg.Sync(0, 16); err != nil {
		t.Fatal(err)
	}
	seg.Close()
	o := snapshot.New(base)
	ov, err := o.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := ov.(backend.Pwriter)
	if !ok {
		t.Fatalf("%T is not a backend.Pwriter", ov)
	}
	if n, err := pw.Pwrite([][]byte{[]byte("AB"), nil, []byte("CDE")}, 3); n != 5 || err != nil {
		t.Fatalf("Pwrite = %d, %v", n, err)
	}
	if got := string(ov.View(0, 16)); got != "012ABCDE89abcdef" {
		t.Fatalf("overlay reads %q", got)
	}
	if n, err := pw.Pwrite([][]byte{[]byte("xyz")}, 14); n != 0 || !errors.Is(err, backend.ErrRange) {
		t.Fatalf("Pwrite past the end = %d, %v", n, err)
	}
	bs, err := base.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	if got := string(bs.View(0, 16)); got != "0123456789abcdef" {
		t.Fatalf("base changed to %q", got)
	}
}
