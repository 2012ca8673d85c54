package cluster_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/cluster"
)

// testCA is a certificate authority written to a temporary directory.
type testCA struct {
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caFile string
	serial int64
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{dir: t.TempDir(), cert: cert, key: key, serial: 1}
	ca.caFile = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.caFile, "CERTIFICATE", der)
	return ca
}

// issue writes a certificate for cn signed by ca (no host names or IPs:
// the group checks the CA only) and its key; it returns their paths.
func (ca *testCA) issue(t *testing.T, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, cn+".pem"), filepath.Join(ca.dir, cn+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
	return certFile, keyFile
}

// peer loads a member's TLS: a certificate for cn from ca, trusting ca.
func (ca *testCA) peer(t *testing.T, cn string) *tls.Config {
	t.Helper()
	c, k := ca.issue(t, cn)
	cfg, err := cluster.LoadPeerTLS(c, k, ca.caFile)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func writePEM(t *testing.T, name, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// logBuffer collects log lines from several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLog waits until the log holds every one of parts on one line.
func (l *logBuffer) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(l.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no log line with %q; log:\n%s", parts, l.String())
}

// TestTLSGroupReplicates: a group whose Raft ports are mutual TLS forms,
// replicates byte-identically, serves a repair (scrub) and an operator's
// query over TLS, and takes a new member with a certificate of its CA.
func TestTLSGroupReplicates(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "group-ca")
	cfgs := map[int]*tls.Config{}
	var mu sync.Mutex
	g := newGroupWith(t, 3, &group{tcp: true, tlsFor: func(i int) *tls.Config {
		mu.Lock()
		defer mu.Unlock()
		if cfgs[i] == nil {
			cfgs[i] = ca.peer(t, fmt.Sprint("n", i+1))
		}
		return cfgs[i]
	}})
	for i := range 40 {
		g.send("T", int32(i%4), fmt.Sprintf("tls-%03d-%s", i, strings.Repeat("x", 100)), "")
	}
	end := g.converge()
	g.sameFiles("commitlog", end)

	// A repair over TLS: a flipped body bit in a follower is rewritten
	// from a replica by a scrub.
	f := (g.leader() + 1) % 3
	st := g.nodes[f].Broker().Store()
	off, err := st.CommitLogOffsetInQueue("T", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(g.dirs[f], "commitlog", "00000000000000000000"), off+120)
	rep, err := g.nodes[f].Scrub(context.Background(), 0, 0, 4096)
	if err != nil || len(rep.Repaired) != 1 {
		t.Fatalf("scrub over TLS: %+v, %v (want one record repaired)", rep, err)
	}
	g.sameFiles("commitlog", end)

	// An operator with a certificate of the group's CA.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	op := cluster.Dialer{TLS: ca.peer(t, "operator")}
	gi, err := op.QueryGroup(ctx, g.peers[f].Addr)
	if err != nil || len(gi.Members) != 3 {
		t.Fatalf("query over TLS: %+v, %v", gi, err)
	}
	src := op.PeerSource(g.peers[f].Addr)
	if b, err := src.ReadAt(ctx, off, 64); err != nil || len(b) != 64 {
		t.Fatalf("repair source over TLS: %d bytes, %v", len(b), err)
	}

	// A new node with the CA's certificate joins and is caught up.
	j := g.addNode("n4")
	nc := g.nodeConfig(j)
	nc.Cluster.Join, nc.Cluster.Peers = true, g.peers[:3]
	n4, err := g.open(j, nc)
	if err != nil {
		t.Fatal(err)
	}
	g.nodes[j] = n4
	g.members(4)
	end = g.converge()
	g.sameFiles("commitlog", end)
}

// TestTLSForeignPeerRefused: against a group on mutual TLS, a node whose
// certificate another CA signed cannot join, cannot append entries or
// ask for votes (the members' terms do not move), cannot read the
// CommitLog or the membership, and neither can a plain-TCP client; each
// refusal is logged with its reason, and the group keeps replicating.
func TestTLSForeignPeerRefused(t *testing.T) {
	t.Parallel()
	ca, other := newTestCA(t, "group-ca"), newTestCA(t, "other-ca")
	logs := &logBuffer{}
	capture := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfgs := map[int]*tls.Config{}
	var mu sync.Mutex
	g := newGroupWith(t, 3, &group{tcp: true, tune: func(nc *cluster.NodeConfig) { nc.Cluster.Logger = capture },
		tlsFor: func(i int) *tls.Config {
			mu.Lock()
			defer mu.Unlock()
			if cfgs[i] == nil {
				ca := ca
				if i == 3 {
					ca = other // the intruder
				}
				cfgs[i] = ca.peer(t, fmt.Sprint("n", i+1))
			}
			return cfgs[i]
		}})
	for i := range 10 {
		g.send("T", int32(i%4), fmt.Sprint("before-", i), "")
	}
	g.converge()
	l := g.leader()
	f := (l + 1) % 3
	terms := func() []string {
		var out []string
		for _, n := range g.nodes[:3] {
			out = append(out, n.Raft().Stats()["term"])
		}
		return out
	}
	before := terms()

	// 1. A node of the other CA started with Join asks the members.
	j := g.addNode("n4")
	nc := g.nodeConfig(j)
	nc.Cluster.Join, nc.Cluster.Peers = true, g.peers[:3]
	n4, err := g.open(j, nc)
	if err != nil {
		t.Fatal(err)
	}
	g.nodes[j] = n4
	// It refuses the members' certificates (not of its CA), and they
	// refuse it.
	logs.waitLog(t, "asking to join the group", "not signed by the group's CA", `group-ca`)
	logs.waitLog(t, "refused a connection to the Raft port", "the peer refused this node's certificate")
	time.Sleep(2 * nc.Cluster.ElectionTimeout) // it keeps asking
	if ms := g.nodes[l].Info().Members; len(ms) != 3 {
		t.Fatalf("members after a foreign node asked to join: %v", ms)
	}
	g.stop(j)

	// 2. Raft RPCs straight to a follower, from an intruder that accepts
	// any server certificate and presents one of the other CA, and in
	// plain text: an entry past the log with a higher term, and a vote
	// request that would depose the leader.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	attacker := other.peer(t, "intruder").Clone()
	attacker.VerifyConnection = nil // InsecureSkipVerify stays: it trusts anyone
	foreign, err := cluster.NewTLSTransport("127.0.0.1:0", "", attacker, quiet)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := cluster.NewTCPTransport("127.0.0.1:0", "", quiet)
	if err != nil {
		t.Fatal(err)
	}
	for name, tr := range map[string]*cluster.TCPTransport{"foreign CA": foreign, "plain TCP": plain} {
		id, addr := raft.ServerID(g.peers[f].ID), raft.ServerAddress(g.peers[f].Addr)
		hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(tr.LocalAddr())}
		if ar, err := forge(tr, g.peers[f]); err == nil {
			t.Fatalf("%s: AppendEntries accepted (%+v)", name, ar)
		}
		var vr raft.RequestVoteResponse
		if err := tr.RequestVote(id, addr, &raft.RequestVoteRequest{RPCHeader: hdr, Term: 1000, LastLogIndex: 1 << 40,
			LastLogTerm: 1000}, &vr); err == nil {
			t.Fatalf("%s: RequestVote answered (%+v)", name, vr)
		}
		tr.CloseStreams()
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	logs.waitLog(t, "refused a connection to the Raft port", "not signed by the group's CA", "intruder", "other-ca")
	logs.waitLog(t, "refused a connection to the Raft port", "not TLS")
	if after := terms(); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("the members' terms moved from %v to %v: a refused peer reached Raft", before, after)
	}

	// 3. The repair and membership requests on the same port.
	intruder := cluster.Dialer{TLS: other.peer(t, "operator")}
	for name, d := range map[string]cluster.Dialer{"foreign CA": intruder, "trusting anyone": {TLS: attacker}, "plain TCP": {}} {
		if _, err := d.QueryGroup(ctx, g.peers[f].Addr); err == nil {
			t.Fatalf("%s: group info answered", name)
		}
		if _, err := d.PeerSource(g.peers[f].Addr).ReadAt(ctx, 0, 64); err == nil {
			t.Fatalf("%s: CommitLog bytes served", name)
		}
		if err := d.AddNode(ctx, g.peers[f].Addr, "n9", "127.0.0.1:1"); err == nil {
			t.Fatalf("%s: add-node accepted", name)
		}
		if err := d.RemoveNode(ctx, g.peers[f].Addr, g.peers[l].ID); err == nil {
			t.Fatalf("%s: remove-node accepted", name)
		}
	}
	// The intruder's own side tells why: the member's certificate is
	// not of its CA (so it cannot pose as a member to real members
	// either).
	if _, err := intruder.QueryGroup(ctx, g.peers[f].Addr); !errors.Is(err, cluster.ErrPeerNotTrusted) {
		t.Fatalf("the intruder's error: %v, want ErrPeerNotTrusted", err)
	}

	// The group keeps working.
	if ms := g.members(3); len(ms) != 3 {
		t.Fatal(ms)
	}
	for i := range 10 {
		g.send("T", int32(i%4), fmt.Sprint("after-", i), "")
	}
	end := g.converge()
	g.sameFiles("commitlog", end)

	t.Run("broken variant", func(t *testing.T) {
		// Members on TLS that take any peer's certificate.
		g := newGroupWith(t, 3, &group{tcp: true, tlsFor: func(i int) *tls.Config {
			return cluster.TrustAnyPeer(ca.peer(t, fmt.Sprint("n", i+1)))
		}})
		g.send("T", 0, "x", "")
		g.converge()
		tr, err := cluster.NewTLSTransport("127.0.0.1:0", "", attacker, quiet)
		if err != nil {
			t.Fatal(err)
		}
		ar, err := forge(tr, g.peers[(g.leader()+1)%3])
		tr.CloseStreams()
		_ = tr.Close()
		if err != nil || !ar.Success {
			t.Fatalf("the forged entry was refused (%v, %+v): the test shows nothing", err, ar)
		}
	})
}

// forge sends p an AppendEntries of a made-up leader: an entry at index 1
// in term 1000, which a member that took it would write over its own.
func forge(tr *cluster.TCPTransport, p cluster.Peer) (raft.AppendEntriesResponse, error) {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(tr.LocalAddr())}
	var ar raft.AppendEntriesResponse
	err := tr.AppendEntries(raft.ServerID(p.ID), raft.ServerAddress(p.Addr), &raft.AppendEntriesRequest{RPCHeader: hdr,
		Term: 1000, Entries: []*raft.Log{{Index: 1, Term: 1000, Type: raft.LogCommand, Data: []byte("forged")}},
		LeaderCommitIndex: 1}, &ar)
	return ar, err
}

// TestLoadPeerTLSErrors: bad raft.tls files are refused when the node
// starts, with an error that names the file and the reason.
func TestLoadPeerTLSErrors(t *testing.T) {
	ca, other := newTestCA(t, "group-ca"), newTestCA(t, "other-ca")
	cert, key := ca.issue(t, "n1")
	foreignCert, foreignKey := other.issue(t, "n1")
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		name, cert, key, ca string
		want                []string
		is                  error
	}{
		{"missing cert", missing, key, ca.caFile, []string{missing}, os.ErrNotExist},
		{"missing key", cert, missing, ca.caFile, []string{missing}, os.ErrNotExist},
		{"key of another cert", cert, foreignKey, ca.caFile, []string{cert, foreignKey, "private key does not match"}, nil},
		{"missing CA", cert, key, missing, []string{"CA file", missing}, os.ErrNotExist},
		{"CA file not PEM", cert, key, notPEM, []string{notPEM, "holds no PEM certificate"}, nil},
		{"own cert of another CA", foreignCert, foreignKey, ca.caFile, []string{foreignCert, "not signed by the group's CA", "other-ca"}, cluster.ErrPeerNotTrusted},
		{"no CA", cert, key, "", []string{"needs certFile, keyFile and caFile"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cluster.LoadPeerTLS(tc.cert, tc.key, tc.ca)
			if err == nil {
				t.Fatal("loaded")
			}
			if !errors.Is(err, cluster.ErrConfig) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("%v: not ErrConfig / %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("%v: does not say %q", err, w)
				}
			}
		})
	}
	if _, err := cluster.NewTLSTransport("127.0.0.1:0", "", nil, quiet); !errors.Is(err, cluster.ErrConfig) {
		t.Fatalf("NewTLSTransport without TLS: %v", err)
	}
}
