package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// netLab is a set of test hosts that can vanish: each host is a network
// namespace with its own IP on a bridge that the lab creates, and the
// test process (clients, a name server) reaches them through the bridge's
// address. Faults are nftables rules of the bridge family on the lab's
// addresses only, so that packets are dropped silently, as when a host
// loses power or a switch port dies (no RST, no ICMP): the peers see
// timeouts, never refusals. It needs root, `ip` (iproute2) and `nft`
// (nftables). The kernels this runs on may lack netem, so a slow link is
// modeled by random loss, which TCP turns into retransmission delays.
type netLab struct {
	t      *testing.T
	id     string
	bridge string
	gw     string   // the bridge's address, in the test's namespace
	hosts  []string // each host's namespace
	ips    []string // each host's address
}

// newNetLab creates n hosts on a fresh /24 of 10.213.0.0/16 and removes
// them when the test ends.
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the network lab needs root (network namespaces and nftables)")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the network lab needs %s (Debian: iproute2, nftables): %v", tool, err)
		}
	}
	l := &netLab{t: t, id: fmt.Sprintf("%x", rand.Uint32()&0xffffff)}
	subnet := l.freeSubnet()
	l.bridge, l.gw = "rsb"+l.id, subnet+".1"
	t.Cleanup(l.remove)
	l.run("ip", "link", "add", l.bridge, "type", "bridge")
	l.run("ip", "addr", "add", l.gw+"/24", "dev", l.bridge)
	l.run("ip", "link", "set", l.bridge, "up")
	for i := range n {
		ns, veth, ip := fmt.Sprintf("rs%sh%d", l.id, i), fmt.Sprintf("rsv%sh%d", l.id, i), fmt.Sprintf("%s.%d", subnet, 11+i)
		l.hosts, l.ips = append(l.hosts, ns), append(l.ips, ip)
		l.run("ip", "netns", "add", ns)
		l.run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
		l.run("ip", "link", "set", veth, "master", l.bridge, "up")
		l.run("ip", "netns", "exec", ns, "ip", "addr", "add", ip+"/24", "dev", "eth0")
		l.run("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
		l.run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
	}
	// One table for the lab's faults; each host's rules are tagged with
	// a comment so that heal removes them alone.
	l.run("nft", "add", "table", "bridge", l.table())
	for _, hook := range []string{"input", "output", "forward"} {
		l.run("nft", "add", "chain", "bridge", l.table(), "c"+hook,
			fmt.Sprintf("{ type filter hook %s priority 0; }", hook))
	}
	return l
}

func (l *netLab) table() string { return "rslab" + l.id }

// freeSubnet picks a /24 of 10.213.0.0/16 that no interface uses.
func (l *netLab) freeSubnet() string {
	addrs, _ := net.InterfaceAddrs()
	for range 100 {
		s := fmt.Sprintf("10.213.%d", rand.IntN(250)+1)
		used := false
		for _, a := range addrs {
			used = used || strings.HasPrefix(a.String(), s+".")
		}
		if !used {
			return s
		}
	}
	l.t.Fatal("no free /24 in 10.213.0.0/16")
	return ""
}

func (l *netLab) run(args ...string) {
	l.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		l.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// command returns cmd run as host i.
func (l *netLab) command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", l.hosts[i], name}, args...)...)
}

// drop makes host i lose every packet it sends or is sent with
// probability pct percent (100: the host vanishes), in both directions,
// to the other hosts and to the test's namespace alike.
func (l *netLab) drop(i, pct int) {
	l.t.Helper()
	match := "drop"
	if pct < 100 {
		match = fmt.Sprintf("numgen random mod 100 < %d drop", pct)
	}
	tag := fmt.Sprintf("comment \"h%d\"", i)
	for _, r := range [][2]string{
		{"cforward", "ip saddr " + l.ips[i]}, {"cforward", "ip daddr " + l.ips[i]},
		{"cinput", "ip saddr " + l.ips[i]}, {"coutput", "ip daddr " + l.ips[i]},
	} {
		l.run("nft", "add", "rule", "bridge", l.table(), r[0], r[1]+" "+match+" "+tag)
	}
}

// heal removes host i's faults.
func (l *netLab) heal(i int) {
	l.t.Helper()
	out, err := exec.Command("nft", "-a", "list", "table", "bridge", l.table()).CombinedOutput()
	if err != nil {
		l.t.Fatalf("nft list: %v\n%s", err, out)
	}
	chain := ""
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "chain ") {
			chain = strings.Fields(line)[1]
		}
		if !strings.Contains(line, fmt.Sprintf("comment \"h%d\"", i)) {
			continue
		}
		if k := strings.LastIndex(line, "# handle "); k >= 0 {
			l.run("nft", "delete", "rule", "bridge", l.table(), chain, "handle", strings.TrimSpace(line[k+len("# handle "):]))
		}
	}
}

// remove deletes the lab (its namespaces take their veth ends along).
func (l *netLab) remove() {
	_ = exec.Command("nft", "delete", "table", "bridge", l.table()).Run()
	for _, ns := range l.hosts {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	_ = exec.Command("ip", "link", "del", l.bridge).Run()
}
