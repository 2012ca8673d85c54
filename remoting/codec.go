package remoting

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// AppendFrame appends c, encoded as one frame with a header in
// c.SerializeType, to dst (Body and BodyParts copied). On error dst is
// returned with its contents unchanged.
func (c *RemotingCommand) AppendFrame(dst []byte) ([]byte, error) {
	dst, err := c.appendFrameHead(dst)
	if err != nil {
		return dst, err
	}
	for _, p := range c.BodyParts {
		dst = append(dst, p...)
	}
	return dst, nil
}

// appendFrameHead appends c's frame up to the end of Body: the length it
// writes counts BodyParts too, which the caller writes after it.
func (c *RemotingCommand) appendFrameHead(dst []byte) ([]byte, error) {
	bodyLen := c.bodyLen()
	if bodyLen > 1<<31-1-frameLenSize-headerWordSize {
		return dst, fmt.Errorf("%w: body of %d bytes exceeds int32", ErrEncode, bodyLen)
	}
	var extBuf [16]extPair
	var ext []extPair
	var extLen int
	if c.ExtFields == nil && c.lean {
		ext, extLen = leanExtSorted(c.ext, extBuf[:0])
	} else {
		ext, extLen = sortedExt(c.ExtFields, extBuf[:0])
	}
	start := len(dst)
	// One allocation for the common case: the estimate covers the fixed
	// fields, the remark, unescaped ext entries and the body.
	dst = slices.Grow(dst, frameLenSize+headerWordSize+128+len(c.Remark)+extLen+len(c.Body))
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // LENGTH and HEADERWORD, set below
	var err error
	switch c.SerializeType {
	case SerializeJSON:
		dst = appendJSONHeader(dst, c, ext)
	case SerializeRocketMQ:
		dst, err = appendBinaryHeader(dst, c, ext)
	default:
		err = fmt.Errorf("%w: unknown serialize type %d", ErrEncode, c.SerializeType)
	}
	if err != nil {
		return dst[:start], err
	}
	hl := len(dst) - start - frameLenSize - headerWordSize
	if hl > maxHeaderLen {
		return dst[:start], fmt.Errorf("%w: header of %d bytes exceeds 24 bits", ErrEncode, hl)
	}
	length := int64(headerWordSize) + int64(hl) + bodyLen
	if length > 1<<31-1-frameLenSize {
		return dst[:start], fmt.Errorf("%w: frame of %d bytes exceeds int32", ErrEncode, length)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(length))
	binary.BigEndian.PutUint32(dst[start+frameLenSize:], uint32(c.SerializeType)<<serializeShift|uint32(hl))
	return append(dst, c.Body...), nil
}

// sortedExt appends ext's entries to buf in key order, the encoding order of
// both header types, and returns them with the bytes of their keys and
// values plus 8 per entry (enough for either header type without escapes).
func sortedExt(ext map[string]string, buf []extPair) ([]extPair, int) {
	n := 0
	for k, v := range ext {
		buf = append(buf, extPair{k, v})
		n += len(k) + len(v) + 8
	}
	slices.SortFunc(buf, func(a, b extPair) int { return strings.Compare(a.k, b.k) })
	return buf, n
}

// MarshalFrame returns c encoded as one frame.
func (c *RemotingCommand) MarshalFrame() ([]byte, error) {
	return c.AppendFrame(nil)
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
	return decodePayloadAs(frame[frameLenSize:], false) // the caller keeps frame
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
	return decodePayloadOwned(payload)
}

// readPayload reads one frame's length field and the LENGTH bytes after it.
func readPayload(r io.Reader, maxFrameSize int) ([]byte, error) {
	length, err := readLength(r)
	if err != nil {
		return nil, err
	}
	n, err := checkLength(int32(length), maxFrameSize)
	if err != nil {
		return nil, err
	}
	return readN(r, n)
}

// readLength reads the length field with io.ReadFull's errors. From a
// bufio.Reader (a connection's) it reads in place, without the allocation
// that a buffer passed to an io.Reader costs.
func readLength(r io.Reader) (uint32, error) {
	if br, ok := r.(*bufio.Reader); ok {
		b, err := br.Peek(frameLenSize)
		if len(b) == frameLenSize {
			_, _ = br.Discard(frameLenSize)
			return binary.BigEndian.Uint32(b), nil
		}
		if err == io.EOF && len(b) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	var lb [frameLenSize]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(lb[:]), nil
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

// maxOwnedPayload bounds the frames whose JSON header strings alias the
// frame (decodePayloadOwned): a string kept by a handler keeps its whole
// frame alive, which for a small frame is about what a copy of its header
// would hold, and for a 4 MiB message would be its body.
const maxOwnedPayload = 4 << 10

// decodePayloadOwned is decodePayloadAs for a payload the command may own
// (read from a connection into a buffer of its own, never reused): a
// small frame's JSON header is decoded in place, without a copy
// (decodeJSONHeaderOwned).
func decodePayloadOwned(p []byte) (*RemotingCommand, error) {
	return decodePayloadAs(p, len(p) <= maxOwnedPayload)
}

// decodePayloadAs decodes the bytes after the length field; the body
// aliases p, and with owned the JSON header's strings do too.
func decodePayloadAs(p []byte, owned bool) (*RemotingCommand, error) {
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
		if owned {
			c, err = decodeJSONHeaderOwned(header)
		} else {
			c, err = decodeJSONHeader(header)
		}
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
