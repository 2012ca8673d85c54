package main

import (
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/remoting"
)

// certRecipe returns the sh block under "## Certificates" in
// docs/security.md.
func certRecipe(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## Certificates\n")
	if i < 0 {
		t.Fatal("docs/security.md has no Certificates section")
	}
	start := strings.Index(doc[i:], "```sh\n")
	if start < 0 {
		t.Fatal("docs/security.md: no sh block under Certificates")
	}
	block := doc[i+start+len("```sh\n"):]
	end := strings.Index(block, "```")
	if end < 0 {
		t.Fatal("docs/security.md: unterminated sh block under Certificates")
	}
	return block[:end]
}

// TestCertificateRecipe runs the openssl commands of docs/security.md
// (in a temporary directory instead of /etc/rocketstore) and uses what
// they make: the remoting port's pair loads, and two members' Raft TLS
// configurations complete a mutual handshake.
func TestCertificateRecipe(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is needed to check the documented recipe: apt-get install -y openssl")
	}
	dir := t.TempDir()
	script := strings.ReplaceAll(certRecipe(t), "/etc/rocketstore", dir)
	cmd := exec.Command("sh", "-e", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the recipe failed: %v\n%s", err, out)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	if _, err := remoting.LoadServerTLS(p("server.pem"), p("server.key")); err != nil {
		t.Fatal(err)
	}
	n1, err := cluster.LoadPeerTLS(p("n1.pem"), p("n1.key"), p("group-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	n2, err := cluster.LoadPeerTLS(p("n2.pem"), p("n2.key"), p("group-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	errc := make(chan error, 1)
	go func() { errc <- tls.Server(a, n1).Handshake() }()
	if err := tls.Client(b, n2).Handshake(); err != nil {
		t.Fatalf("n2 to n1: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("n1 accepting n2: %v", err)
	}
}
