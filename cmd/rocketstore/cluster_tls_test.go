package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
)

// selfSigned writes a self-signed CA certificate and its key: a group
// whose CA is the node's own certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "group"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1.key")
	for name, b := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kb}} {
		if err := os.WriteFile(name, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// TestServeConfigRaftTLS: raft.tls opens a mutual-TLS Raft port; a
// missing file is an error naming it before the port opens; without
// raft.tls the port is plain TCP and a warning says so.
func TestServeConfigRaftTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	load := func(tlsYAML string) *raftFileConfig {
		t.Helper()
		name := filepath.Join(dir, "c.yaml")
		y := "brokerName: broker-a\nraft:\n  nodeId: n1\n  bind: 127.0.0.1:0\n  peers: [n1@127.0.0.1:7001]\n" + tlsYAML
		if err := os.WriteFile(name, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		_, rc, err := loadServeConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	rc := load("  tls:\n    certFile: " + cert + "\n    keyFile: " + key + "\n    caFile: " + cert + "\n")
	tr, err := rc.transport("", log)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.TLS() {
		t.Fatal("raft.tls set, the transport is plain TCP")
	}
	_ = tr.Close()

	missing := filepath.Join(dir, "nope.pem")
	rc = load("  tls:\n    certFile: " + cert + "\n    keyFile: " + key + "\n    caFile: " + missing + "\n")
	if _, err := rc.transport("", log); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing caFile: %v", err)
	}

	name := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(name, []byte("raft:\n  nodeId: n1\n  bind: 127.0.0.1:0\n  tls:\n    cert: x\n"), 0o644)
	if _, _, err := loadServeConfig(name); err == nil || !strings.Contains(err.Error(), "cert") {
		t.Fatalf("unknown raft.tls key: %v", err)
	}

	if logs.Len() != 0 {
		t.Fatalf("warned with TLS on: %s", logs.String())
	}
	tr, err = load("").transport("", log)
	if err != nil {
		t.Fatal(err)
	}
	_ = tr.Close()
	if tr.TLS() || !strings.Contains(logs.String(), "the Raft port is not authenticated") {
		t.Fatalf("plain TCP: TLS %v, log %q", tr.TLS(), logs.String())
	}
}

// TestAdminClusterOverTLS: against a node whose Raft port has TLS,
// `admin cluster members` answers with --tls-cert/--tls-key/--tls-ca of
// the group's CA, and without them fails with a hint naming the flags.
func TestAdminClusterOverTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	cfg, err := cluster.LoadPeerTLS(cert, key, cert)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cluster.NewTLSTransport("127.0.0.1:0", "", cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr := string(tr.LocalAddr())
	node := oneNodeGroup(t, t.TempDir(), tr, addr)
	defer func() {
		if err := node.Close(); err != nil {
			t.Error(err)
		}
	}()
	var out, errOut bytes.Buffer
	args := []string{"admin", "--timeout", "5s", "cluster", "members", "--raft", addr}
	if code := execute(append(args, "--tls-cert", cert, "--tls-key", key, "--tls-ca", cert), &out, &errOut); code != exitOK ||
		!strings.Contains(out.String(), "leader "+addr) {
		t.Fatalf("members over TLS: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := execute(args, &out, &errOut); code == exitOK || !strings.Contains(errOut.String(), "--tls-cert") {
		t.Fatalf("members in plain text of a TLS port: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
