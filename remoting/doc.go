// Package remoting speaks the Apache RocketMQ 4.x remoting protocol: the
// frame codec, the RemotingCommand it carries, a TCP server that dispatches
// requests to handlers by request code, and a small client.
//
// # Wire format
//
// Every command travels in one frame (all integers big-endian):
//
//	0 LENGTH int32      = 4 + HEADERLEN + len(BODY); the frame on the wire is LENGTH+4 bytes
//	4 SERIALIZE byte    | HEADERLEN uint24   (0 = JSON header, 1 = ROCKETMQ binary header)
//	8 HEADER [HEADERLEN]byte
//	  BODY   [LENGTH-4-HEADERLEN]byte
//
// The JSON header is the object {"code","language","version","opaque","flag",
// "remark","extFields","serializeTypeCurrentRPC"}; the ROCKETMQ header is laid
// out in format.go. The official clients always send JSON; responses are
// encoded in the serialize type of the request they answer.
//
// # Robustness
//
// Input is untrusted. A frame longer than Options.MaxFrameSize, a negative or
// inconsistent length, an unknown serialize type or a malformed header is an
// error wrapping ErrFrameTooLarge, ErrBadFrame or ErrBadHeader, and the
// connection that sent it is closed. A frame's buffer grows with the bytes
// that actually arrive, never beyond the declared and validated length, so a
// peer that announces 16 MiB and sends nothing costs a few KiB. A connection
// that stays silent, or stalls inside a frame, for Options.IdleTimeout is
// dropped. Each connection's outgoing frames wait in a queue bounded in count
// and bytes; a peer that does not read until that queue is full is
// disconnected so that it cannot grow the server's memory.
//
// # Concurrency
//
// Each connection has one read goroutine and one write goroutine. Every
// request runs in its own goroutine, at most Options.MaxConcurrentRequests at
// once per connection; when that many are running the read goroutine stops
// reading, which pushes back on the peer through TCP. A handler may return a
// nil response and answer later (long polling) with Conn.WriteResponse.
// Conn methods are safe for concurrent use. Server.Close and Server.Shutdown
// wait for every goroutine the server started, handlers included.
package remoting
