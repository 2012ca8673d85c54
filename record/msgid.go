package record

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
)

// ErrBadMsgID reports a string that is not an offset message id.
var ErrBadMsgID = fmt.Errorf("record: bad offset message id")

const hexUpper = "0123456789ABCDEF"

// AppendOffsetMsgID appends RocketMQ's offset message id: the store host's
// address (4 or 16 bytes) and port (4 bytes) and the commitlog offset (8
// bytes), as uppercase hex (32 characters for IPv4, 56 for IPv6).
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, offset int64) []byte {
	var raw [28]byte
	b := appendHost(raw[:0], storeHost)
	b = be.AppendUint64(b, uint64(offset))
	for _, c := range b {
		dst = append(dst, hexUpper[c>>4], hexUpper[c&0xF])
	}
	return dst
}

// OffsetMsgID returns the offset message id as a string.
func OffsetMsgID(storeHost netip.AddrPort, offset int64) string {
	var buf [56]byte
	return string(AppendOffsetMsgID(buf[:0], storeHost, offset))
}

// ParseOffsetMsgID decodes an offset message id into the store host and the
// commitlog offset.
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	if len(id) != 32 && len(id) != 56 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w %q: %d characters, want 32 or 56", ErrBadMsgID, id, len(id))
	}
	raw, err := hex.DecodeString(strings.ToLower(id))
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w %q: %w", ErrBadMsgID, id, err)
	}
	n := len(raw) - 8
	return parseHost(raw[:n]), int64(be.Uint64(raw[n:])), nil
}
