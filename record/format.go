// Package record is the RocketMQ 4.x CommitLog record format (v1): its byte
// layout, an allocation-free encoder and a decoder that never panics.
//
// Record layout (all integers big-endian; offsets for IPv4 hosts):
//
//	 0 TOTALSIZE       int32   whole record, this field included
//	 4 MAGICCODE       int32   0xDAA320A7 (message) or 0xCBD43194 (blank)
//	 8 BODYCRC         int32   crc32(body) & 0x7FFFFFFF
//	12 QUEUEID         int32
//	16 FLAG            int32
//	20 QUEUEOFFSET     int64   index in the ConsumeQueue
//	28 PHYSICALOFFSET  int64   offset of this record in the CommitLog
//	36 SYSFLAG         int32   see the SysFlag constants
//	40 BORNTIMESTAMP   int64   milliseconds
//	48 BORNHOST        8 | 20  IPv4 (4) or IPv6 (16) address + int32 port
//	56 STORETIMESTAMP  int64
//	64 STOREHOST       8 | 20
//	72 RECONSUMETIMES  int32
//	76 PREPAREDTXOFF   int64
//	84 BODYLEN int32 | BODY | TOPICLEN int8 | TOPIC | PROPLEN int16 | PROPERTIES
//
// A BLANK record, written where the next record does not fit in a file, is
// [int32 remaining bytes][int32 BlankMagic] and fills the file.
//
// These values are RocketMQ's format: never change them.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Magic codes.
const (
	MagicMessage   int32 = -626843481 // 0xDAA320A7, v1 record
	MagicMessageV2 int32 = -626843477 // 0xDAA320AB, 5.x record with a 2-byte topic length
	MagicBlank     int32 = -875286124 // 0xCBD43194, end-of-file filler

	magicMessageBits   uint32 = 0xDAA320A7
	magicBlankBits     uint32 = 0xCBD43194
	magicMessageV2Bits uint32 = 0xDAA320AB
)

// Field offsets that do not depend on host widths.
const (
	offTotalSize      = 0
	offMagic          = 4
	offBodyCRC        = 8
	offQueueID        = 12
	offFlag           = 16
	offQueueOffset    = 20
	offPhysicalOffset = 28
	offSysFlag        = 36
	offBornTimestamp  = 40
	offBornHost       = 48
)

// Sizes.
const (
	// FixedOverhead is the size of a record with IPv4 hosts, an empty body,
	// an empty topic and no properties.
	FixedOverhead = 91
	// ipv6Extra is what each IPv6 host field adds.
	ipv6Extra = 12
	// BlankLength is the minimum room a file keeps for its BLANK record
	// (RocketMQ's END_FILE_MIN_BLANK_LENGTH).
	BlankLength = 8
	// MaxTopicLength is the longest topic a v1 record can hold.
	MaxTopicLength = 127
	// MaxPropertiesLength is the longest encoded property string.
	MaxPropertiesLength = 32767
)

// SYSFLAG bits.
const (
	FlagCompressed        int32 = 0x1
	FlagMultiTags         int32 = 0x2
	TransactionNotType    int32 = 0x0
	TransactionPrepared   int32 = 0x4
	TransactionCommit     int32 = 0x8
	TransactionRollback   int32 = 0xC
	transactionMask       int32 = 0xC
	FlagBornHostV6        int32 = 0x10
	FlagStoreHostV6       int32 = 0x20
	FlagNeedUnwrap        int32 = 0x40
	FlagInnerBatch        int32 = 0x80
	FlagCompressionTypeV2 int32 = 0x700
)

// TransactionType returns the transaction bits of a sysflag.
func TransactionType(sysFlag int32) int32 { return sysFlag & transactionMask }

// Errors returned by the decoder. They are wrapped with the position and
// the detail; test them with errors.Is.
var (
	// ErrCorrupt reports bytes that are not a valid record.
	ErrCorrupt = errors.New("record: corrupt")
	// ErrTruncated reports a record that runs past the end of the buffer.
	ErrTruncated = errors.New("record: truncated")
	// ErrUnsupportedVersion reports a RocketMQ 5.x v2 record, which we never
	// misread as v1.
	ErrUnsupportedVersion = errors.New("record: unsupported record version (v2)")
)

var be = binary.BigEndian

// hostLen returns the width of a host field (address + port).
func hostLen(v6 bool) int {
	if v6 {
		return 20
	}
	return 8
}

// Length returns RocketMQ's calMsgLength: the encoded size of a record.
func Length(sysFlag int32, bodyLen, topicLen, propsLen int) int {
	n := FixedOverhead + bodyLen + topicLen + propsLen
	if sysFlag&FlagBornHostV6 != 0 {
		n += ipv6Extra
	}
	if sysFlag&FlagStoreHostV6 != 0 {
		n += ipv6Extra
	}
	return n
}

// BodyCRC returns the BODYCRC field for body: RocketMQ's UtilAll.crc32,
// which masks off the sign bit.
func BodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// hostOffsets returns the offsets of STORETIMESTAMP, RECONSUMETIMES and
// BODYLEN in a record with sysFlag: the host fields before them are 8
// bytes (IPv4) or 20 (IPv6) each. Plain values, not a struct: recovery
// decodes every record, and a struct of them was spilled and copied (a
// store-forwarding stall, a fifth of decodeFields' time).
func hostOffsets(sysFlag int32) (storeTimestamp, reconsumeTimes, bodyLen int) {
	storeTimestamp = offBornHost + hostLen(sysFlag&FlagBornHostV6 != 0)
	reconsumeTimes = storeTimestamp + 8 + hostLen(sysFlag&FlagStoreHostV6 != 0)
	return storeTimestamp, reconsumeTimes, reconsumeTimes + 4 + 8
}

// PutBlank writes a BLANK record of length n (n >= BlankLength) header into
// dst[:8] and returns the 8 bytes to write.
func PutBlank(dst []byte, n int32) []byte {
	be.PutUint32(dst[0:], uint32(n))
	be.PutUint32(dst[4:], magicBlankBits)
	return dst[:BlankLength]
}

// Errors returned by the encoder for messages that cannot be stored; the
// broker maps them to MESSAGE_ILLEGAL and PROPERTIES_SIZE_EXCEEDED.
var (
	// ErrMessageIllegal reports a message that cannot be encoded.
	ErrMessageIllegal = errors.New("record: message illegal")
	// ErrTopicTooLong reports a topic over MaxTopicLength bytes.
	ErrTopicTooLong = fmt.Errorf("%w: topic too long", ErrMessageIllegal)
	// ErrMessageTooLarge reports a body or record over the size limit.
	ErrMessageTooLarge = fmt.Errorf("%w: message too large", ErrMessageIllegal)
	// ErrPropertiesTooLarge reports encoded properties over
	// MaxPropertiesLength bytes.
	ErrPropertiesTooLarge = errors.New("record: properties size exceeded")
)
