package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// AppendFrame appends c, encoded as one frame with a header in
// c.SerializeType, to dst.
func (c *RemotingCommand) AppendFrame(dst []byte) ([]byte, error) {
	header, err := c.encodeHeader()
	if err != nil {
		return dst, err
	}
	if len(header) > maxHeaderLen {
		return dst, fmt.Errorf("%w: header of %d bytes exceeds 24 bits", ErrEncode, len(header))
	}
	length := int64(headerWordSize) + int64(len(header)) + int64(len(c.Body))
	if length > 1<<31-1-frameLenSize {
		return dst, fmt.Errorf("%w: frame of %d bytes exceeds int32", ErrEncode, length)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(length))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.SerializeType)<<serializeShift|uint32(len(header)))
	dst = append(dst, header...)
	return append(dst, c.Body...), nil
}

// MarshalFrame returns c encoded as one frame.
func (c *RemotingCommand) MarshalFrame() ([]byte, error) {
	return c.AppendFrame(nil)
}

func (c *RemotingCommand) encodeHeader() ([]byte, error) {
	switch c.SerializeType {
	case SerializeJSON:
		return encodeJSONHeader(c)
	case SerializeRocketMQ:
		return encodeBinaryHeader(c)
	}
	return nil, fmt.Errorf("%w: unknown serialize type %d", ErrEncode, c.SerializeType)
}

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

// readPayload reads one frame's length field and the LENGTH bytes after it.
func readPayload(r io.Reader, maxFrameSize int) ([]byte, error) {
	var lb [frameLenSize]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, err
	}
	n, err := checkLength(int32(binary.BigEndian.Uint32(lb[:])), maxFrameSize)
	if err != nil {
		return nil, err
	}
	return readN(r, n)
}

// readN reads exactly n bytes, growing its buffer by doubling from readChunk
// so that memory follows the bytes received, not the bytes announced.
func readN(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, min(n, readChunk))
	got := 0
	for {
		m, err := io.ReadFull(r, buf[got:])
		got += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if got == n {
			return buf, nil
		}
		grown := make([]byte, min(2*len(buf), n))
		copy(grown, buf[:got])
		buf = grown
	}
}

// checkLength validates a LENGTH field and returns it as an int.
func checkLength(length int32, maxFrameSize int) (int, error) {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	switch {
	case length < 0:
		return 0, fmt.Errorf("%w: negative length %d", ErrBadFrame, length)
	case length < headerWordSize:
		return 0, fmt.Errorf("%w: length %d leaves no room for the header-length word", ErrBadFrame, length)
	case int64(length)+frameLenSize > int64(maxFrameSize):
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, int64(length)+frameLenSize, maxFrameSize)
	}
	return int(length), nil
}

// decodePayload decodes the bytes after the length field. The body aliases
// payload.
func decodePayload(p []byte) (*RemotingCommand, error) {
	word := binary.BigEndian.Uint32(p)
	st := SerializeType(word >> serializeShift)
	hl := int(word & headerLenMask)
	if hl > len(p)-headerWordSize {
		return nil, fmt.Errorf("%w: header length %d exceeds the %d bytes left in the frame", ErrBadFrame, hl, len(p)-headerWordSize)
	}
	header := p[headerWordSize : headerWordSize+hl]
	var c *RemotingCommand
	var err error
	switch st {
	case SerializeJSON:
		c, err = decodeJSONHeader(header)
	case SerializeRocketMQ:
		c, err = decodeBinaryHeader(header)
	default:
		return nil, fmt.Errorf("%w: unknown serialize type %d", ErrBadFrame, st)
	}
	if err != nil {
		return nil, err
	}
	c.SerializeType = st
	if body := p[headerWordSize+hl:]; len(body) > 0 {
		c.Body = body[:len(body):len(body)]
	}
	return c, nil
}
