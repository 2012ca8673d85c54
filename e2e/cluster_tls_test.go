package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// jepsenTLS reports whether the Jepsen group's Raft ports run mutual TLS
// (raft.tls): yes unless ROCKETSTORE_JEPSEN_TLS=0. TLS is what docs/cluster.md
// recommends for a group, and the nemesis's proxy only forwards bytes, so
// kills, partitions and snapshot installs all run over it; the plain
// transport is tested in cluster/.
func jepsenTLS() bool { return os.Getenv("ROCKETSTORE_JEPSEN_TLS") != "0" }

// raftTLSSection writes a CA and a certificate for node id signed by it
// (the CA is made once per dir) and returns the raft.tls section naming
// them.
func raftTLSSection(t *testing.T, dir, id string) string {
	t.Helper()
	caCert, caKey := loadOrMakeCA(t, dir)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: id},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, id+".pem"), filepath.Join(dir, id+".key")
	writePEMFile(t, certFile, "CERTIFICATE", der)
	writePEMFile(t, keyFile, "EC PRIVATE KEY", kb)
	return fmt.Sprintf("  tls:\n    certFile: %s\n    keyFile: %s\n    caFile: %s\n", certFile, keyFile, filepath.Join(dir, "ca.pem"))
}

func loadOrMakeCA(t *testing.T, dir string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	if cb, err := os.ReadFile(certFile); err == nil {
		kb, err := os.ReadFile(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cp, _ := pem.Decode(cb)
		kp, _ := pem.Decode(kb)
		cert, err := x509.ParseCertificate(cp.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		key, err := x509.ParseECPrivateKey(kp.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return cert, key
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jepsen group CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEMFile(t, certFile, "CERTIFICATE", der)
	writePEMFile(t, keyFile, "EC PRIVATE KEY", kb)
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func writePEMFile(t *testing.T, name, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkRaftTLSLogs checks that each replica ran the Raft transport the
// test asked for: serve warns of an unauthenticated Raft port exactly
// when raft.tls is not set.
func checkRaftTLSLogs(t *testing.T, g *jepsenGroup) {
	t.Helper()
	for i, r := range g.reps {
		b, err := os.ReadFile(r.log)
		if err != nil {
			t.Error(err)
			continue
		}
		if warned := bytes.Contains(b, []byte("the Raft port is not authenticated")); warned == jepsenTLS() {
			t.Errorf("n%d: warned of a plain Raft port: %v, with raft.tls: %v", i+1, warned, jepsenTLS())
		}
	}
}
