// Package testport hands tests loopback ports that stay theirs across
// restarts of the process listening on them.
//
// A port from net.Listen("tcp", "127.0.0.1:0") comes from the kernel's
// ephemeral range (ip_local_port_range). A test that stops a server and
// starts it again on the same port races every outgoing connection on the
// machine, whose source ports come from that same range, and every other
// test that listens on port 0: when one of them takes the port meanwhile,
// the restart fails with "address already in use". The ports handed out
// here lie below the ephemeral range, and each is reserved across the test
// processes that `go test ./...` runs side by side by an exclusive lock
// on a file in the temporary directory, held until the process exits.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// floor is the lowest port handed out: below it lie the well-known and
// registered ports that services on a developer's machine may hold.
const floor = 10000

var (
	mu   sync.Mutex
	held = map[int]*os.File{} // the lock files, open for the process' life
)

// Addr returns "ip:port" for a port that ip can listen on now, that no
// other caller in this process or in another test process holds, and that
// the kernel does not hand out as an ephemeral port.
func Addr(t testing.TB, ip string) string {
	t.Helper()
	return net.JoinHostPort(ip, strconv.Itoa(Port(t, ip)))
}

// Port is Addr's port alone.
func Port(t testing.TB, ip string) int {
	t.Helper()
	lo := ephemeralLow()
	if lo <= floor+1000 {
		t.Fatalf("testport: the ephemeral range starts at %d, leaving no room below it", lo)
	}
	mu.Lock()
	defer mu.Unlock()
	for range 2000 {
		p := floor + rand.IntN(lo-floor)
		if held[p] != nil || !reserve(p) {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		if err != nil {
			continue // taken by something that does not use this package
		}
		_ = ln.Close()
		return p
	}
	t.Fatalf("testport: no free port in [%d, %d) after 2000 tries", floor, lo)
	return 0
}

// reserve takes port p's lock file; it stays locked (and p reserved) until
// the process exits, when the kernel releases the lock.
func reserve(p int) bool {
	name := filepath.Join(os.TempDir(), fmt.Sprintf("rocketstore-testport-%d.lock", p))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	held[p] = f
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux'
// default when the file cannot be read).
func ephemeralLow() int {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				lo = v
			}
		}
	}
	return lo
}
