package testport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPortsAreDistinctBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	seen := map[int]bool{}
	for range 20 {
		p := Port(t, "127.0.0.1")
		if p < floor || p >= lo {
			t.Fatalf("port %d outside [%d, %d)", p, floor, lo)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d handed out but cannot be listened on: %v", p, err)
		}
		_ = ln.Close()
	}
}

// TestReservedPortIsLockedForOthers: another process (here another open
// file description, which flock treats alike) cannot take a handed-out port.
func TestReservedPortIsLockedForOthers(t *testing.T) {
	p := Port(t, "127.0.0.1")
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "rocketstore-testport-"+strconv.Itoa(p)+".lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		t.Fatalf("port %d's lock was taken a second time", p)
	}
}
