package remoting

import (
	"encoding/binary"
	"fmt"
	"io"
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

// ReadFrame reads and decodes one frame from r. maxFrameSize <= 0 means
// DefaultMaxFrameSize. The payload buffer grows with the bytes that arrive
// and never beyond the validated declared length. A clean end of input
// before the frame starts is io.EOF; inside a frame it is
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxFrameSize int) (*RemotingCommand, error) {
	payload, err := readPayload(r, maxFrameSize)
	if err != nil {
		return nil, err
	}
	return decodePayload(payload)
}
