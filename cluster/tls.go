package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Mutual TLS on the Raft port.
//
// Everything a group's members say to each other goes over one port per
// node (raft.bind): Raft's RPCs (AppendEntries, votes, InstallSnapshot),
// and on the same port the repair protocol (CommitLog bytes and CRCs for
// repair and scrub) and the membership requests (join, remove, info).
// Whoever can talk to that port can write to the group — append entries,
// so store or delete anything — or join it. With TLS (NewTLSTransport,
// raft.tls in the config) every connection to the port, whatever it
// carries, is a TLS connection on which both ends present a certificate
// signed by the group's CA (raft.tls.caFile); a peer without one is
// refused during the handshake, before any byte of a request is read,
// and the refusal is logged with the peer's address and the reason.
//
// The check is the CA signature only, not a host name: peers are dialled
// by IP address and a certificate need not name it. Any certificate the
// CA signed is a member's, so the CA must be the group's own (not a
// public CA, nor one that signs client certificates).

// ErrPeerNotTrusted reports a peer certificate that the group's CA did
// not sign.
var ErrPeerNotTrusted = errors.New("cluster: peer certificate not signed by the group's CA")

// LoadPeerTLS loads the mutual TLS of a group's Raft port: this node's
// certificate chain and key (PEM) and the CA (PEM, one or more
// certificates) that signs every member's certificate. The result serves
// both ends of a connection (NewTLSTransport, Dialer). It fails, naming
// the file, when a file is missing or holds no usable certificate or key,
// and when the node's own certificate is not signed by the CA (its peers
// would refuse it).
func LoadPeerTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, fmt.Errorf("%w: raft tls needs certFile, keyFile and caFile (got %q, %q, %q)", ErrConfig, certFile, keyFile, caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: raft tls: certificate %s / key %s: %w", ErrConfig, certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: raft tls: CA file: %w", ErrConfig, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: raft tls: CA file %s holds no PEM certificate", ErrConfig, caFile)
	}
	chain := make([]*x509.Certificate, len(cert.Certificate))
	for i, der := range cert.Certificate {
		if chain[i], err = x509.ParseCertificate(der); err != nil {
			return nil, fmt.Errorf("%w: raft tls: certificate %s: %w", ErrConfig, certFile, err)
		}
	}
	if err := verifyPeer(pool, chain); err != nil {
		return nil, fmt.Errorf("%w: raft tls: this node's certificate %s: %w", ErrConfig, certFile, err)
	}
	return peerTLSConfig(cert, pool), nil
}

func peerTLSConfig(cert tls.Certificate, pool *x509.CertPool) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		// Both ends check the other's chain against the group's CA
		// (verifyPeer) instead of Go's default checks, which would also
		// want the dialled IP in the server's certificate and separate
		// server and client certificates. VerifyConnection, unlike
		// VerifyPeerCertificate, runs on resumed sessions too.
		ClientAuth:         tls.RequireAnyClientCert,
		InsecureSkipVerify: true, //nolint:gosec // verified by VerifyConnection against the group's CA
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyPeer(pool, cs.PeerCertificates)
		},
	}
}

// verifyPeer checks a presented chain (leaf first) against the CA.
func verifyPeer(pool *x509.CertPool, certs []*x509.Certificate) error {
	if len(certs) == 0 {
		return fmt.Errorf("%w: no certificate presented", ErrPeerNotTrusted)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return fmt.Errorf("%w: subject %q, issuer %q: %v", ErrPeerNotTrusted, certs[0].Subject, certs[0].Issuer, err)
	}
	return nil
}

// handshakeTimeout bounds a TLS handshake on the Raft port.
const handshakeTimeout = 10 * time.Second

// serverHandshake runs the server side of a connection's handshake.
func serverHandshake(c net.Conn, cfg *tls.Config) (net.Conn, error) {
	tc := tls.Server(c, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}

// dialFunc dials a member's Raft port.
type dialFunc func(ctx context.Context, addr string) (net.Conn, error)

// dialer returns the dialFunc of cfg: plain TCP when cfg is nil, else
// TLS with the handshake done (so that a refusal is the dial's error).
func dialer(d net.Dialer, cfg *tls.Config) dialFunc {
	if cfg == nil {
		return func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	td := &tls.Dialer{NetDialer: &d, Config: cfg}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := td.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("cluster: TLS to %s: %w", addr, err)
		}
		return c, nil
	}
}

// Dialer reaches a group's Raft port from outside the group: operators'
// membership commands and offline repair from a running replica. The
// zero value dials plain TCP; TLS (LoadPeerTLS, with a certificate the
// group's CA signed) is needed for a group whose port requires it.
type Dialer struct {
	TLS *tls.Config
}

func (d Dialer) dial() dialFunc { return dialer(net.Dialer{}, d.TLS) }

// AddNode asks the group that the node at raftAddr belongs to (any
// member: a follower points to the leader) to add node id at addr, its
// Raft address, as a voter. The node is started empty with Join; the
// leader catches it up.
func (d Dialer) AddNode(ctx context.Context, raftAddr, id, addr string) error {
	return addNode(ctx, d.dial().admin, raftAddr, id, addr)
}

// RemoveNode asks the group that the node at raftAddr belongs to to
// remove node id.
func (d Dialer) RemoveNode(ctx context.Context, raftAddr, id string) error {
	return removeNode(ctx, d.dial().admin, raftAddr, id)
}

// QueryGroup asks the node at raftAddr what it knows of its group.
func (d Dialer) QueryGroup(ctx context.Context, raftAddr string) (GroupInfo, error) {
	return queryGroup(ctx, d.dial().admin, raftAddr)
}

// PeerSource is the running replica whose Raft port is raftAddr, as a
// source for RepairStore.
func (d Dialer) PeerSource(raftAddr string) RepairSource {
	return peerSource{addr: raftAddr, dial: d.dial()}
}

// describeRefusal is the reason logged for a refused connection.
func describeRefusal(err error) string {
	s := err.Error()
	switch {
	case errors.Is(err, ErrPeerNotTrusted):
		return s
	case strings.Contains(s, "first record does not look like a TLS handshake"):
		return "not TLS (a plain-text peer, or a client that is not a member): " + s
	case strings.Contains(s, "client didn't provide a certificate"):
		return "no client certificate: " + s
	case strings.Contains(s, "remote error: tls: bad certificate"):
		return "the peer refused this node's certificate (it trusts another CA: not a member): " + s
	}
	return s
}
