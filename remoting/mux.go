package remoting

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Handler answers requests. Handle returns the response to write, or nil
// when nothing is to be written now: for one-way requests, or because the
// answer comes later through conn.WriteResponse (long polling keeps req and
// answers with req.NewResponse). A returned error is answered with
// SYSTEM_ERROR (1) and the error text as remark. ctx is canceled when the
// connection or the server closes. The server owns the returned response:
// it sets its opaque and response flag.
type Handler interface {
	Handle(ctx context.Context, conn *Conn, req *RemotingCommand) (*RemotingCommand, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, conn *Conn, req *RemotingCommand) (*RemotingCommand, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, conn *Conn, req *RemotingCommand) (*RemotingCommand, error) {
	return f(ctx, conn, req)
}

// Mux routes requests to handlers by request code and answers unknown codes
// with REQUEST_CODE_NOT_SUPPORTED (3). It is safe for concurrent use.
type Mux struct {
	mu          sync.RWMutex
	handlers    map[int32]Handler
	unsupported atomic.Int64
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{handlers: map[int32]Handler{}} }

// Register routes code to h. Registering a code twice, or a nil handler,
// is a programming error and panics.
func (m *Mux) Register(code int32, h Handler) {
	if h == nil {
		panic(fmt.Sprintf("remoting: nil handler for code %d", code))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.handlers[code]; dup {
		panic(fmt.Sprintf("remoting: code %d registered twice", code))
	}
	m.handlers[code] = h
}

// RegisterFunc routes code to f.
func (m *Mux) RegisterFunc(code int32, f func(ctx context.Context, conn *Conn, req *RemotingCommand) (*RemotingCommand, error)) {
	m.Register(code, HandlerFunc(f))
}

// Handle dispatches req to the handler registered for req.Code.
func (m *Mux) Handle(ctx context.Context, conn *Conn, req *RemotingCommand) (*RemotingCommand, error) {
	m.mu.RLock()
	h := m.handlers[req.Code]
	m.mu.RUnlock()
	if h == nil {
		m.unsupported.Add(1)
		return req.NewResponse(CodeRequestCodeNotSupported,
			fmt.Sprintf("request type %d not supported", req.Code)), nil
	}
	return h.Handle(ctx, conn, req)
}

// Unsupported returns how many requests had a code with no handler.
func (m *Mux) Unsupported() int64 { return m.unsupported.Load() }
