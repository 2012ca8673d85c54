package remoting

import "errors"

// Sentinel errors. Functions wrap them with %w and the details (field name,
// lengths, peer); test with errors.Is.
var (
	// ErrFrameTooLarge reports a frame whose declared length exceeds the
	// configured maximum.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrBadFrame reports a frame whose lengths are negative or
	// inconsistent, or whose serialize type is unknown.
	ErrBadFrame = errors.New("remoting: bad frame")
	// ErrBadHeader reports a header that does not decode: bad JSON, a
	// truncated or inconsistent ROCKETMQ binary header.
	ErrBadHeader = errors.New("remoting: bad header")
	// ErrEncode reports a command that cannot be encoded, e.g. a code that
	// does not fit the binary header's int16.
	ErrEncode = errors.New("remoting: cannot encode command")
	// ErrMissingField reports an extFields entry that a handler requires but
	// the request lacks.
	ErrMissingField = errors.New("remoting: missing header field")
	// ErrBadField reports an extFields entry that does not parse as the
	// expected type.
	ErrBadField = errors.New("remoting: bad header field")
	// ErrConnClosed is returned by Conn and Client methods once the
	// connection is closed.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrWriteQueueFull is the reason a connection was closed because its
	// peer did not read fast enough.
	ErrWriteQueueFull = errors.New("remoting: write queue full")
	// ErrIdleTimeout is the reason a connection was closed because its peer
	// sent nothing, or stalled inside a frame, for Options.IdleTimeout.
	ErrIdleTimeout = errors.New("remoting: idle timeout")
	// ErrFrameTimeout is the reason a server connection was closed because
	// its peer stalled inside a frame for Options.FrameTimeout.
	ErrFrameTimeout = errors.New("remoting: frame timeout")
	// ErrTooManyConns is why a server refused a connection: it had
	// Options.MaxConns open.
	ErrTooManyConns = errors.New("remoting: too many connections")
	// ErrServerClosed is returned by Serve and Listen after Close or
	// Shutdown.
	ErrServerClosed = errors.New("remoting: server closed")
	// ErrBadOptions reports an invalid Options value.
	ErrBadOptions = errors.New("remoting: bad options")
)
