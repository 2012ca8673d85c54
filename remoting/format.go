package remoting

// Frame layout (all integers big-endian):
//
//	0 LENGTH int32  = 4 + HEADERLEN + BODYLEN   (the frame is LENGTH+4 bytes)
//	4 HEADERWORD int32: SERIALIZE byte << 24 | HEADERLEN (24 bits)
//	8 HEADER [HEADERLEN]byte | BODY [BODYLEN]byte
//
// ROCKETMQ binary header layout (Java RocketMQSerializable):
//
//	 0 CODE int16 | 2 LANGUAGE byte | 3 VERSION int16 | 5 OPAQUE int32 | 9 FLAG int32
//	13 REMARKLEN int32 | 17 REMARK [REMARKLEN]byte (UTF-8)
//	   EXTLEN int32 | EXT [EXTLEN]byte, a sequence of
//	                  KEYLEN int16 | KEY | VALUELEN int32 | VALUE
//
// These values are RocketMQ's format: never change them.
const (
	frameLenSize     = 4         // LENGTH
	headerWordSize   = 4         // HEADERWORD
	maxHeaderLen     = 1<<24 - 1 // HEADERLEN has 24 bits
	serializeShift   = 24
	headerLenMask    = 1<<24 - 1
	binOffCode       = 0
	binOffLanguage   = 2
	binOffVersion    = 3
	binOffOpaque     = 5
	binOffFlag       = 9
	binOffRemarkLen  = 13
	binFixedLen      = 17 // fields before REMARK
	binMinHeaderLen  = 21 // fixed fields, REMARKLEN and EXTLEN
	binExtKeyLenSize = 2
	binExtValLenSize = 4
)

// DefaultMaxFrameSize is RocketMQ's default frame limit (Java NettyDecoder's
// com.rocketmq.remoting.frameMaxLength, 16777216), counted like Netty's
// LengthFieldBasedFrameDecoder: the whole frame, length field included.
const DefaultMaxFrameSize = 16 << 20

// readChunk is the first allocation for a frame's payload; the buffer then
// doubles as bytes arrive, up to the declared length.
const readChunk = 64 << 10
