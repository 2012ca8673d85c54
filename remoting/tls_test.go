package remoting

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCert writes a self-signed certificate for 127.0.0.1 and its key to
// dir and returns their paths and a pool that trusts it.
func testCert(t *testing.T, dir string) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rocketstore test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

func TestParseTLSMode(t *testing.T) {
	for s, want := range map[string]TLSMode{"disabled": TLSDisabled, "": TLSDisabled, "Permissive": TLSPermissive, "enforcing": TLSEnforcing} {
		if got, err := ParseTLSMode(s); err != nil || got != want {
			t.Errorf("ParseTLSMode(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseTLSMode("strict"); err == nil {
		t.Error("strict accepted")
	}
	if _, err := LoadServerTLS("/nonexistent/cert.pem", "/nonexistent/key.pem"); err == nil {
		t.Error("missing certificate accepted")
	}
}

// TestTLSModes serves each mode and connects with a plain and a TLS
// client: disabled takes plain only, enforcing TLS only, permissive both
// on one port.
func TestTLSModes(t *testing.T) {
	certPath, keyPath, pool := testCert(t, t.TempDir())
	cfg, err := LoadServerTLS(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode           TLSMode
		plainOK, tlsOK bool
	}{
		{TLSDisabled, true, false},
		{TLSPermissive, true, true},
		{TLSEnforcing, false, true},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			mux := NewMux()
			mux.RegisterFunc(testCodeEcho, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
				resp := req.NewResponse(CodeSuccess, "")
				resp.Body = req.Body
				return resp, nil
			})
			srv, err := NewServer(mux, Options{Logger: quietLogger(), IdleTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = srv.Serve(TLSListener(ln, tc.mode, cfg)) }()
			defer srv.Close()
			addr := ln.Addr().String()
			try := func(useTLS bool) error {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				opts := ClientOptions{Options: Options{Logger: quietLogger()}}
				var cl *Client
				var err error
				if useTLS {
					cl, err = DialTLS(ctx, addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, opts)
				} else {
					cl, err = Dial(ctx, addr, opts)
				}
				if err != nil {
					return err
				}
				defer cl.Close()
				resp, err := cl.Invoke(ctx, NewRequest(testCodeEcho, []byte("ping")))
				if err == nil && string(resp.Body) != "ping" {
					t.Fatalf("echo %q", resp.Body)
				}
				return err
			}
			if err := try(false); (err == nil) != tc.plainOK {
				t.Errorf("plain client: err %v, want success %v", err, tc.plainOK)
			}
			if err := try(true); (err == nil) != tc.tlsOK {
				t.Errorf("TLS client: err %v, want success %v", err, tc.tlsOK)
			}
		})
	}
}
