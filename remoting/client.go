package remoting

import (
	"context"
	"net"
	"sync/atomic"
)

// ClientOptions configures Dial.
type ClientOptions struct {
	Options
	// Handler serves requests the server sends (e.g. 40
	// NOTIFY_CONSUMER_IDS_CHANGED). nil answers every such request with
	// REQUEST_CODE_NOT_SUPPORTED, except one-way ones.
	Handler Handler
}

// Client is one connection to a remoting server, for tests and tools.
type Client struct {
	conn  *Conn
	stats counters
	done  chan struct{} // closed when the connection's goroutines are gone
}

var clientIDs atomic.Uint64

// Dial connects to addr ("127.0.0.1:9876"); ctx bounds the connect only.
func Dial(ctx context.Context, addr string, opts ClientOptions) (*Client, error) {
	var d net.Dialer
	return dialWith(ctx, d.DialContext, addr, opts)
}

// dialWith validates opts, connects with dial and starts the client's
// connection (Dial over TCP, DialTLS over TLS).
func dialWith(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string,
	opts ClientOptions) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	h := opts.Handler
	if h == nil {
		h = NewMux()
	}
	cl := &Client{done: make(chan struct{})}
	cl.conn = newConn(context.Background(), clientIDs.Add(1), nc, h, opts.withDefaults(), &cl.stats, nil)
	go func() {
		defer close(cl.done)
		cl.conn.run()
	}()
	return cl, nil
}

// Conn returns the client's connection.
func (cl *Client) Conn() *Conn { return cl.conn }

// Invoke sends req and waits for its response; see Conn.Invoke.
func (cl *Client) Invoke(ctx context.Context, req *RemotingCommand) (*RemotingCommand, error) {
	return cl.conn.Invoke(ctx, req)
}

// InvokeOneway sends req without waiting; see Conn.InvokeOneway.
func (cl *Client) InvokeOneway(ctx context.Context, req *RemotingCommand) error {
	return cl.conn.InvokeOneway(ctx, req)
}

// Stats returns the client connection's counters.
func (cl *Client) Stats() Stats { return cl.stats.snapshot() }

// Close closes the connection and waits for its goroutines.
func (cl *Client) Close() error {
	cl.conn.close(nil)
	<-cl.done
	return nil
}
