package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
)

// appendBinaryHeader appends c's ROCKETMQ header (layout in format.go) to
// dst; ext is c.ExtFields in key order, so that the encoding is
// deterministic.
func appendBinaryHeader(dst []byte, c *RemotingCommand, ext []extPair) ([]byte, error) {
	if c.Code < math.MinInt16 || c.Code > math.MaxInt16 {
		return dst, fmt.Errorf("%w: code %d does not fit the binary header's int16", ErrEncode, c.Code)
	}
	if c.Version < math.MinInt16 || c.Version > math.MaxInt16 {
		return dst, fmt.Errorf("%w: version %d does not fit the binary header's int16", ErrEncode, c.Version)
	}
	extLen := 0
	for _, p := range ext {
		if len(p.k) > math.MaxInt16 {
			return dst, fmt.Errorf("%w: extFields key of %d bytes exceeds int16", ErrEncode, len(p.k))
		}
		extLen += binExtKeyLenSize + len(p.k) + binExtValLenSize + len(p.v)
	}
	b := dst
	b = binary.BigEndian.AppendUint16(b, uint16(int16(c.Code)))
	b = append(b, byte(c.Language))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(c.Version)))
	b = binary.BigEndian.AppendUint32(b, uint32(c.Opaque))
	b = binary.BigEndian.AppendUint32(b, uint32(c.Flag))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.Remark)))
	b = append(b, c.Remark...)
	b = binary.BigEndian.AppendUint32(b, uint32(extLen))
	for _, p := range ext {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.k)))
		b = append(b, p.k...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(p.v)))
		b = append(b, p.v...)
	}
	return b, nil
}

// decodeBinaryHeader reads a ROCKETMQ header, checking every length against
// the bytes that remain.
func decodeBinaryHeader(b []byte) (*RemotingCommand, error) {
	if len(b) < binMinHeaderLen {
		return nil, fmt.Errorf("%w: binary header of %d bytes, minimum %d", ErrBadHeader, len(b), binMinHeaderLen)
	}
	c := &RemotingCommand{
		Code:     int32(int16(binary.BigEndian.Uint16(b[binOffCode:]))),
		Language: LanguageCode(b[binOffLanguage]),
		Version:  int32(int16(binary.BigEndian.Uint16(b[binOffVersion:]))),
		Opaque:   int32(binary.BigEndian.Uint32(b[binOffOpaque:])),
		Flag:     int32(binary.BigEndian.Uint32(b[binOffFlag:])),
	}
	r := binReader{b: b, off: binOffRemarkLen}
	remark, err := r.bytes32("remark")
	if err != nil {
		return nil, err
	}
	c.Remark = string(remark)
	ext, err := r.bytes32("extFields")
	if err != nil {
		return nil, err
	}
	// Bytes after extFields are ignored, as Java's decoder ignores them.
	if !c.IsResponse() && leanRequest(c.Code) {
		lc := newLeanCommand(c, leanEntriesInline)
		lc.ext, err = decodeBinaryExtLean(ext, lc.ext)
		if err != nil {
			return nil, err
		}
		return lc, nil
	}
	if c.ExtFields, err = decodeBinaryExt(ext); err != nil {
		return nil, err
	}
	return c, nil
}

func decodeBinaryExt(b []byte) (map[string]string, error) {
	ext := map[string]string{}
	r := binReader{b: b}
	for r.off < len(b) {
		k, err := r.bytes16("extFields key")
		if err != nil {
			return nil, err
		}
		v, err := r.bytes32("extFields value")
		if err != nil {
			return nil, err
		}
		ext[string(k)] = string(v)
	}
	return ext, nil
}

// decodeBinaryExtLean reads the extFields of a lean request (extlean.go)
// into entries whose strings share one copy of b.
func decodeBinaryExtLean(b []byte, out []extPair) ([]extPair, error) {
	if len(b) == 0 {
		return out, nil
	}
	s := string(b)
	r := binReader{b: b}
	for r.off < len(b) {
		kStart := r.off + 2
		k, err := r.bytes16("extFields key")
		if err != nil {
			return nil, err
		}
		vStart := r.off + 4
		v, err := r.bytes32("extFields value")
		if err != nil {
			return nil, err
		}
		out = append(out, extPair{s[kStart : kStart+len(k)], s[vStart : vStart+len(v)]})
	}
	return out, nil
}

// binReader reads length-prefixed byte strings with bounds checks.
type binReader struct {
	b   []byte
	off int
}

func (r *binReader) bytes16(what string) ([]byte, error) {
	if len(r.b)-r.off < 2 {
		return nil, fmt.Errorf("%w: truncated %s length at %d", ErrBadHeader, what, r.off)
	}
	n := int(binary.BigEndian.Uint16(r.b[r.off:]))
	r.off += 2
	return r.take(n, what)
}

func (r *binReader) bytes32(what string) ([]byte, error) {
	if len(r.b)-r.off < 4 {
		return nil, fmt.Errorf("%w: truncated %s length at %d", ErrBadHeader, what, r.off)
	}
	n := int(int32(binary.BigEndian.Uint32(r.b[r.off:])))
	r.off += 4
	if n < 0 {
		return nil, fmt.Errorf("%w: negative %s length %d", ErrBadHeader, what, n)
	}
	return r.take(n, what)
}

func (r *binReader) take(n int, what string) ([]byte, error) {
	if n > len(r.b)-r.off {
		return nil, fmt.Errorf("%w: %s of %d bytes exceeds the %d left", ErrBadHeader, what, n, len(r.b)-r.off)
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s, nil
}
