package remoting

import (
	"encoding/binary"
	"fmt"
)

// The tests' frame decoders: the connection reads frames with readPayload
// and decodePayload; these wrap the same steps for a byte slice and a
// plain io.Reader.

// DecodeFrame decodes frame, which must hold exactly one frame, length field
// included. maxFrameSize <= 0 means DefaultMaxFrameSize. It never panics:
// malformed input yields an error wrapping ErrFrameTooLarge, ErrBadFrame or
// ErrBadHeader.
func DecodeFrame(frame []byte, maxFrameSize int) (*RemotingCommand, error) {
	if len(frame) < frameLenSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the length field", ErrBadFrame, len(frame))
	}
	n, err := checkLength(int32(binary.BigEndian.Uint32(frame)), maxFrameSize)
	if err != nil {
		return nil, err
	}
	if got := len(frame) - frameLenSize; got != n {
		return nil, fmt.Errorf("%w: length field says %d bytes, %d follow", ErrBadFrame, n, got)
	}
	return decodePayload(frame[frameLenSize:])
}
