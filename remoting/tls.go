package remoting

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
)

// TLSMode is RocketMQ's tlsServerMode: whether the remoting port speaks
// TLS.
type TLSMode uint8

// TLS modes.
const (
	// TLSDisabled serves plain TCP only (RocketMQ's default).
	TLSDisabled TLSMode = iota
	// TLSPermissive serves TLS and plain TCP on one port: the first byte
	// of a connection decides (a TLS handshake record starts with 0x16,
	// which no remoting frame of a sane size does).
	TLSPermissive
	// TLSEnforcing serves TLS only; a plain client fails its handshake.
	TLSEnforcing
)

// ParseTLSMode reads "disabled", "permissive" or "enforcing" (any case).
func ParseTLSMode(s string) (TLSMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "disabled", "":
		return TLSDisabled, nil
	case "permissive":
		return TLSPermissive, nil
	case "enforcing":
		return TLSEnforcing, nil
	}
	return 0, fmt.Errorf("%w: tlsServerMode %q is not disabled, permissive or enforcing", ErrBadOptions, s)
}

// String returns RocketMQ's name of m.
func (m TLSMode) String() string {
	switch m {
	case TLSPermissive:
		return "permissive"
	case TLSEnforcing:
		return "enforcing"
	}
	return "disabled"
}

// LoadServerTLS reads a PEM certificate chain and key into a server
// configuration that accepts TLS 1.2 and later.
func LoadServerTLS(certPath, keyPath string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("remoting: TLS certificate %s / key %s: %w", certPath, keyPath, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// TLSListener wraps ln for mode: TLSDisabled returns ln, TLSEnforcing a
// TLS listener, TLSPermissive a listener whose connections decide on
// their first byte. The handshake runs on the connection's first read, in
// its own goroutine, so a slow client never stalls Accept.
func TLSListener(ln net.Listener, mode TLSMode, cfg *tls.Config) net.Listener {
	switch mode {
	case TLSEnforcing:
		return tls.NewListener(ln, cfg)
	case TLSPermissive:
		return &sniffListener{Listener: ln, cfg: cfg}
	}
	return ln
}

type sniffListener struct {
	net.Listener
	cfg *tls.Config
}

func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, cfg: l.cfg}, nil
}

// tlsRecordHandshake is the content type byte of a TLS handshake record.
// A remoting frame starts with its big-endian length, so a first byte of
// 0x16 would announce a frame of over 350 MiB, far above any frame limit.
const tlsRecordHandshake = 0x16

// sniffConn is a connection that becomes TLS or stays plain on its first
// byte. Deadlines and Close act on the socket beneath, so they work
// before and after the decision.
type sniffConn struct {
	net.Conn // the socket
	cfg      *tls.Config
	once     sync.Once
	inner    net.Conn // TLS or plain, after the first byte
	err      error
}

func (c *sniffConn) decide() {
	c.once.Do(func() {
		var b [1]byte
		if _, err := io.ReadFull(c.Conn, b[:]); err != nil {
			c.err = err
			return
		}
		pc := &prefixConn{Conn: c.Conn, prefix: b[:]}
		if b[0] == tlsRecordHandshake {
			c.inner = tls.Server(pc, c.cfg)
		} else {
			c.inner = pc
		}
	})
}

func (c *sniffConn) Read(p []byte) (int, error) {
	if c.decide(); c.err != nil {
		return 0, c.err
	}
	return c.inner.Read(p)
}

func (c *sniffConn) Write(p []byte) (int, error) {
	if c.decide(); c.err != nil {
		return 0, c.err
	}
	return c.inner.Write(p)
}

// prefixConn returns prefix before reading the socket.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// DialTLS connects to addr over TLS with cfg, as Dial does over TCP.
func DialTLS(ctx context.Context, addr string, cfg *tls.Config, opts ClientOptions) (*Client, error) {
	d := tls.Dialer{Config: cfg}
	return dialWith(ctx, d.DialContext, addr, opts)
}
