package remoting

import (
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
)

// SerializeType is the header encoding of a frame: the high byte of its
// header-length word.
type SerializeType uint8

// Serialize types. The values are RocketMQ's: never change them.
const (
	SerializeJSON     SerializeType = 0
	SerializeRocketMQ SerializeType = 1
)

// String returns RocketMQ's name for t ("JSON", "ROCKETMQ").
func (t SerializeType) String() string {
	switch t {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	}
	return fmt.Sprintf("SerializeType(%d)", uint8(t))
}

// Flag bits of RemotingCommand.Flag.
const (
	// FlagResponse (RPC_TYPE) marks a response; requests have it clear.
	FlagResponse int32 = 1 << 0
	// FlagOneway (RPC_ONEWAY) marks a request that wants no response.
	// The Go client never sets it on its one-way requests, so a server
	// must tolerate answering requests nobody waits for.
	FlagOneway int32 = 1 << 1
)

// DefaultVersion is the version this package puts on the commands it
// creates. Clients store the HEART_BEAT response's version as the broker
// version; 317 is what the official Go client sends (RocketMQ 4.3-era).
const DefaultVersion int32 = 317

// DefaultLanguage is the language this package puts on the commands it
// creates: JAVA, as the Java broker reports, which every client accepts.
const DefaultLanguage = LanguageJava

// RemotingCommand is one request or response (Java RemotingCommand).
//
// A decoded command's Body aliases the frame it was read from; it is never
// reused by this package, so handlers may keep it.
type RemotingCommand struct {
	Code      int32             // request code, or response code when IsResponse
	Language  LanguageCode      // sender's implementation language
	Version   int32             // sender's RocketMQ version ordinal
	Opaque    int32             // request id; a response echoes its request's
	Flag      int32             // FlagResponse | FlagOneway
	Remark    string            // free text, mostly error detail in responses
	ExtFields map[string]string // the custom header, all values as strings
	// SerializeType is the header encoding: set by decoding, used by
	// encoding. NewResponse copies the request's so the answer uses the
	// encoding the peer spoke.
	SerializeType SerializeType
	Body          []byte
	// BodyParts, when set, follow Body as the rest of the body. A Conn
	// writes them from these slices without copying them (a pull answer
	// sends the store's records this way, straight from the CommitLog's
	// mapping); AppendFrame copies them.
	BodyParts [][]byte
	// Release, when set, is called once the connection that was given
	// the command (WriteResponse, Invoke, InvokeOneway) no longer needs
	// BodyParts: after the frame is written, or when it is dropped
	// (encoding error, full queue, closed connection). It is called
	// exactly once; until then BodyParts must stay valid and unchanged.
	Release func()

	// ext holds the extFields of a lean command (see extlean.go): a
	// decoded send or pull request, or a NewLeanResponse. ExtFields is
	// nil while lean is set.
	ext  []extPair
	lean bool
}

var nextOpaque atomic.Int32

// NextOpaque returns a process-wide fresh request id.
func NextOpaque() int32 { return nextOpaque.Add(1) }

// NewRequest returns a JSON-encoded request with a fresh opaque and a
// non-nil ExtFields map.
func NewRequest(code int32, body []byte) *RemotingCommand {
	return &RemotingCommand{
		Code:      code,
		Language:  DefaultLanguage,
		Version:   DefaultVersion,
		Opaque:    NextOpaque(),
		ExtFields: map[string]string{},
		Body:      body,
	}
}

// NewResponse returns the response to c with the given code and remark: the
// same opaque and serialize type, FlagResponse set, a non-nil ExtFields map.
func (c *RemotingCommand) NewResponse(code int32, remark string) *RemotingCommand {
	return &RemotingCommand{
		Code:          code,
		Language:      DefaultLanguage,
		Version:       DefaultVersion,
		Opaque:        c.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		ExtFields:     map[string]string{},
		SerializeType: c.SerializeType,
	}
}

// release calls and clears Release, if set.
func (c *RemotingCommand) release() {
	if f := c.Release; f != nil {
		c.Release = nil
		f()
	}
}

// bodyLen is the length of the body on the wire: Body and BodyParts.
func (c *RemotingCommand) bodyLen() int64 {
	n := int64(len(c.Body))
	for _, p := range c.BodyParts {
		n += int64(len(p))
	}
	return n
}

// IsResponse reports whether FlagResponse is set.
func (c *RemotingCommand) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether FlagOneway is set.
func (c *RemotingCommand) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// Clone returns a copy of c with its own ExtFields map; Body and BodyParts
// are shared, and Release is not copied (the original keeps the duty).
func (c *RemotingCommand) Clone() *RemotingCommand {
	d := *c
	d.ExtFields = maps.Clone(c.ExtFields)
	d.ext = slices.Clone(c.ext)
	d.Release = nil
	return &d
}

// String summarises c for logs; it omits the body.
func (c *RemotingCommand) String() string {
	kind := "request"
	if c.IsResponse() {
		kind = "response"
	}
	return fmt.Sprintf("%s{code=%d opaque=%d flag=%d lang=%s ver=%d remark=%q ext=%v body=%dB}",
		kind, c.Code, c.Opaque, c.Flag, c.Language, c.Version, c.Remark, c.extForString(), c.bodyLen())
}

// extForString returns the extFields for String without changing c.
func (c *RemotingCommand) extForString() map[string]string {
	if c.ExtFields != nil || !c.lean {
		return c.ExtFields
	}
	m := make(map[string]string, len(c.ext))
	for _, p := range c.ext {
		m[p.k] = p.v
	}
	return m
}
