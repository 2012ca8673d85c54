package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/hashicorp/raft"
)

// Frame layout (all integers big-endian):
//
//	 0 LENGTH uint32 | 4 CRC uint32 | 8 TYPE uint8 | 9 INDEX uint64 | 17 TERM uint64 |
//	25 APPENDEDAT int64 | 33 body
//
//	record body: OFFSET int64 | SIZE uint32 | RECORDSCRC uint32  (the records are in the CommitLog)
//	side body:   LOGTYPE uint8 | EXTLEN uint32 | EXTENSIONS | DATA (the whole entry)
//	head body:   RECORDSEND int64 (INDEX is the log's new first index; RECORDSEND the
//	             records' end then, -1 for none)
//	roll body:   none (the log goes on in the next segment)
//
// LENGTH counts the whole frame; CRC is the Castagnoli CRC-32 of the bytes
// from TYPE to the frame's end. TYPE's high bit (firstOfAppend) marks the
// first entry frame a StoreLogs call wrote: the frames from the last such
// one on are the only ones whose StoreLogs may not have returned.
// RECORDSCRC is the Castagnoli CRC-32 of the entry's records, which Open
// checks for the entries of that last call (their records and frames are
// synced at once, so either may have reached the disk without the other). A LENGTH of 0 is the end of the written
// part of a segment: segments are created zero-filled and a truncation
// zeroes what it drops. APPENDEDAT is in Unix nanoseconds, 0 for none.
const (
	offLength     = 0
	offCRC        = 4
	offType       = 8
	offIndex      = 9
	offTerm       = 17
	offAppendedAt = 25
	headerSize    = 33

	recordBodySize = 8 + 4 + 4
	sideBodyMin    = 1 + 4
)

// Frame types.
const (
	frameRecord byte = 1
	frameSide   byte = 2
	frameHead   byte = 3
	frameRoll   byte = 4

	// firstOfAppend is TYPE's flag on the first entry frame of a
	// StoreLogs call.
	firstOfAppend byte = 0x80
)

// Records entry Data layout: KIND uint8 (KindRecords) | OFFSET int64 | records.
const (
	// KindRecords is the first byte of a records entry's Data. The
	// cluster's other entry kinds (1–6) are side entries.
	KindRecords byte = 7
	// RecordsHeaderSize is the size of a records entry's header.
	RecordsHeaderSize = 1 + 8
)

// ErrCorrupt reports frames or records that contradict each other on disk.
var ErrCorrupt = errors.New("raftlog: corrupt log")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frame is one decoded frame; body aliases the segment.
type frame struct {
	typ byte
	// first is the firstOfAppend flag.
	first      bool
	index      uint64
	term       uint64
	appendedAt int64
	body       []byte
}

// recordsOf returns the CommitLog offset and records of a records entry,
// or ok false for a side entry. An entry with extensions is a side entry:
// a record frame has no room for them.
func recordsOf(l *raft.Log) (off int64, recs []byte, ok bool) {
	if l.Type != raft.LogCommand || len(l.Extensions) != 0 || len(l.Data) <= RecordsHeaderSize || l.Data[0] != KindRecords {
		return 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(l.Data[1:])), l.Data[RecordsHeaderSize:], true
}

func appendedAtNanos(l *raft.Log) int64 {
	if l.AppendedAt.IsZero() {
		return 0
	}
	return l.AppendedAt.UnixNano()
}

func appendedAtTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// appendFrame encodes l's frame onto b: a record frame when asRecords,
// flagged as the first of its StoreLogs call when first.
func appendFrame(b []byte, l *raft.Log, asRecords, first bool) []byte {
	start := len(b)
	var flag byte
	if first {
		flag = firstOfAppend
	}
	if off, recs, ok := recordsOf(l); ok && asRecords {
		b = appendHeader(b, frameRecord|flag, l.Index, l.Term, appendedAtNanos(l))
		b = binary.BigEndian.AppendUint64(b, uint64(off))
		b = binary.BigEndian.AppendUint32(b, uint32(len(recs)))
		b = binary.BigEndian.AppendUint32(b, crc32.Checksum(recs, castagnoli))
	} else {
		b = appendHeader(b, frameSide|flag, l.Index, l.Term, appendedAtNanos(l))
		b = append(b, byte(l.Type))
		b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
		b = append(b, l.Extensions...)
		b = append(b, l.Data...)
	}
	return sealFrame(b, start)
}

// appendHead encodes a head frame onto b.
func appendHead(b []byte, first uint64, recordsEnd int64) []byte {
	start := len(b)
	b = appendHeader(b, frameHead, first, 0, 0)
	return sealFrame(binary.BigEndian.AppendUint64(b, uint64(recordsEnd)), start)
}

// appendRoll encodes a roll frame onto b.
func appendRoll(b []byte) []byte {
	start := len(b)
	return sealFrame(appendHeader(b, frameRoll, 0, 0, 0), start)
}

func appendHeader(b []byte, typ byte, index, term uint64, appendedAt int64) []byte {
	b = binary.BigEndian.AppendUint64(b, 0) // LENGTH and CRC, filled in by sealFrame
	b = append(b, typ)
	b = binary.BigEndian.AppendUint64(b, index)
	b = binary.BigEndian.AppendUint64(b, term)
	return binary.BigEndian.AppendUint64(b, uint64(appendedAt))
}

func sealFrame(b []byte, start int) []byte {
	f := b[start:]
	binary.BigEndian.PutUint32(f[offLength:], uint32(len(f)))
	binary.BigEndian.PutUint32(f[offCRC:], crc32.Checksum(f[offType:], castagnoli))
	return b
}

// errEnd reports the end of a segment's frames (a zero LENGTH).
var errEnd = errors.New("raftlog: end of frames")

// decodeFrame decodes the frame at the start of b. It returns errEnd at
// zeroes and an error wrapping ErrCorrupt for a frame that is torn or
// does not check; it never reads past b.
func decodeFrame(b []byte) (frame, int, error) {
	if len(b) < 4 || binary.BigEndian.Uint32(b) == 0 {
		return frame{}, 0, errEnd
	}
	n := int(binary.BigEndian.Uint32(b))
	if n < headerSize || n > len(b) {
		return frame{}, 0, fmt.Errorf("%w: frame length %d with %d bytes left", ErrCorrupt, n, len(b))
	}
	f := b[:n]
	if got, want := crc32.Checksum(f[offType:], castagnoli), binary.BigEndian.Uint32(f[offCRC:]); got != want {
		return frame{}, 0, fmt.Errorf("%w: frame crc %08x, want %08x", ErrCorrupt, got, want)
	}
	fr := frame{typ: f[offType] &^ firstOfAppend, first: f[offType]&firstOfAppend != 0, index: binary.BigEndian.Uint64(f[offIndex:]), term: binary.BigEndian.Uint64(f[offTerm:]),
		appendedAt: int64(binary.BigEndian.Uint64(f[offAppendedAt:])), body: f[headerSize:]}
	switch {
	case fr.first && fr.typ != frameRecord && fr.typ != frameSide:
		// Only entry frames are flagged.
	case fr.typ == frameRecord && len(fr.body) == recordBodySize,
		fr.typ == frameSide && len(fr.body) >= sideBodyMin && int(binary.BigEndian.Uint32(fr.body[1:])) <= len(fr.body)-sideBodyMin,
		fr.typ == frameHead && len(fr.body) == 8,
		fr.typ == frameRoll && len(fr.body) == 0:
		return fr, n, nil
	}
	return frame{}, 0, fmt.Errorf("%w: frame type %d with a body of %d bytes", ErrCorrupt, fr.typ, len(fr.body))
}

// recordBody decodes a record frame's body.
func (f frame) recordBody() (off int64, size int) {
	return int64(binary.BigEndian.Uint64(f.body)), int(binary.BigEndian.Uint32(f.body[8:]))
}

// recordsCRC is a record frame's RECORDSCRC.
func (f frame) recordsCRC() uint32 { return binary.BigEndian.Uint32(f.body[12:]) }

// headBody decodes a head frame's records end.
func (f frame) headBody() int64 { return int64(binary.BigEndian.Uint64(f.body)) }

// sideLog decodes a side frame into l, copying its bytes.
func (f frame) sideLog(l *raft.Log) {
	ext := int(binary.BigEndian.Uint32(f.body[1:]))
	*l = raft.Log{Index: f.index, Term: f.term, Type: raft.LogType(f.body[0]), AppendedAt: appendedAtTime(f.appendedAt)}
	if ext > 0 {
		l.Extensions = append([]byte(nil), f.body[sideBodyMin:sideBodyMin+ext]...)
	}
	l.Data = append([]byte(nil), f.body[sideBodyMin+ext:]...)
}

func putOffset(data []byte, off int64) { binary.BigEndian.PutUint64(data[1:], uint64(off)) }

// EncodeRecords returns the Data of a records entry: records to be stored
// at CommitLog offset off.
func EncodeRecords(off int64, records []byte) []byte {
	data := make([]byte, RecordsHeaderSize+len(records))
	data[0] = KindRecords
	putOffset(data, off)
	copy(data[RecordsHeaderSize:], records)
	return data
}
