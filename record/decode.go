package record

import (
	"fmt"
	"net/netip"
)

// ErrNoRecord reports zeroed bytes where a record would start: the normal end
// of the data in a preallocated file, not damage.
var ErrNoRecord = fmt.Errorf("%w: no record (zero bytes)", ErrCorrupt)

// Info is a checked record, decoded without copying: the byte slices alias
// the buffer given to Check.
type Info struct {
	// Size is TOTALSIZE; for a BLANK record, the length it fills.
	Size int32
	// Blank is set for the end-of-file filler; no other field is.
	Blank bool

	BodyCRC                   int32
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	PhysicalOffset            int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  []byte // address + 4-byte port
	StoreTimestamp            int64
	StoreHost                 []byte
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	Body                      []byte
	Topic                     []byte
	Properties                []byte
}

// Check decodes and validates the record at the start of buf, which is
// expected at CommitLog offset pos (pass pos < 0 to skip the position
// checks). When checkCRC is set the body CRC is verified. It never panics and
// never reads outside buf; errors wrap ErrCorrupt, ErrTruncated,
// ErrUnsupportedVersion or ErrNoRecord and say what was wrong.
//
// With pos >= 0 it also checks that PHYSICALOFFSET equals pos (stale bytes
// written for another offset are not a record) and that no sector of the
// record was torn (see CheckTornSectors).
func Check(buf []byte, pos int64, checkCRC bool) (Info, error) {
	return CheckWith(buf, pos, Checks{CRC: checkCRC})
}

// Checks selects the optional validations of CheckWith.
type Checks struct {
	// CRC verifies the body CRC.
	CRC bool
	// NoPhysicalOffset skips the PHYSICALOFFSET == pos check: for a
	// record read out of its place in the log (a message fetched from a
	// broker by offset id) and for the engine's broken-variant tests.
	NoPhysicalOffset bool
}

// CheckWith is Check with the optional validations chosen by c.
func CheckWith(buf []byte, pos int64, c Checks) (Info, error) {
	var r Info
	err := CheckInto(&r, buf, pos, c)
	return r, err
}

// CheckInto is CheckWith writing the decoded record into *r, which must be
// zero, instead of returning it: a caller checking many records spares the
// copy of the Info.
func CheckInto(r *Info, buf []byte, pos int64, c Checks) error {
	if len(buf) < BlankLength {
		return fmt.Errorf("%w: %d bytes left, need %d for a header", ErrTruncated, len(buf), BlankLength)
	}
	r.Size = int32(be.Uint32(buf[offTotalSize:]))
	switch magic := be.Uint32(buf[offMagic:]); magic {
	case magicMessageBits:
	case magicBlankBits:
		if r.Size < BlankLength || int(r.Size) > len(buf) {
			return fmt.Errorf("%w: blank record of %d bytes with %d left", ErrCorrupt, r.Size, len(buf))
		}
		r.Blank = true
		return nil
	case magicMessageV2Bits:
		return ErrUnsupportedVersion
	default:
		if magic == 0 && r.Size == 0 {
			return ErrNoRecord
		}
		return fmt.Errorf("%w: bad magic code %08X", ErrCorrupt, magic)
	}
	if r.Size < FixedOverhead {
		return fmt.Errorf("%w: total size %d below the minimum %d", ErrCorrupt, r.Size, FixedOverhead)
	}
	if int(r.Size) > len(buf) {
		return fmt.Errorf("%w: total size %d with %d bytes left", ErrTruncated, r.Size, len(buf))
	}
	rec := buf[:r.Size]
	if err := r.decodeFields(rec); err != nil {
		return err
	}
	if pos >= 0 && r.StoreTimestamp == 0 {
		// Set under the put lock from the clock: never 0 in a record
		// that was written whole (a torn header reads as zeros).
		return fmt.Errorf("%w: store timestamp 0", ErrCorrupt)
	}
	if pos >= 0 && !c.NoPhysicalOffset && r.PhysicalOffset != pos {
		return fmt.Errorf("%w: PHYSICALOFFSET %d at position %d (stale bytes)", ErrCorrupt, r.PhysicalOffset, pos)
	}
	if pos >= 0 {
		if err := r.checkTornSectors(rec, pos); err != nil {
			return err
		}
	}
	if c.CRC {
		if crc := BodyCRC(r.Body); crc != r.BodyCRC {
			return fmt.Errorf("%w: body crc %08x, want %08x", ErrCorrupt, crc, r.BodyCRC)
		}
	}
	return nil
}

// decodeFields reads the fields of rec, which holds exactly TOTALSIZE bytes
// (at least FixedOverhead: CheckInto checks).
func (r *Info) decodeFields(rec []byte) error {
	_ = rec[offBornHost] // one bounds check for the fixed fields (CheckInto: len >= FixedOverhead)
	r.BodyCRC = int32(be.Uint32(rec[offBodyCRC:]))
	r.QueueID = int32(be.Uint32(rec[offQueueID:]))
	r.Flag = int32(be.Uint32(rec[offFlag:]))
	r.QueueOffset = int64(be.Uint64(rec[offQueueOffset:]))
	r.PhysicalOffset = int64(be.Uint64(rec[offPhysicalOffset:]))
	r.SysFlag = int32(be.Uint32(rec[offSysFlag:]))
	r.BornTimestamp = int64(be.Uint64(rec[offBornTimestamp:]))
	storeTs, reconsume, p := hostOffsets(r.SysFlag)
	// With IPv6 hosts the fixed part is longer than FixedOverhead.
	if p+4+1+2 > len(rec) {
		return fmt.Errorf("%w: total size %d too small for sysflag %#x", ErrCorrupt, len(rec), r.SysFlag)
	}
	r.BornHost = rec[offBornHost:storeTs]
	r.StoreTimestamp = int64(be.Uint64(rec[storeTs:]))
	r.StoreHost = rec[storeTs+8 : reconsume]
	r.ReconsumeTimes = int32(be.Uint32(rec[reconsume:]))
	r.PreparedTransactionOffset = int64(be.Uint64(rec[reconsume+4:]))
	bodyLen := int(int32(be.Uint32(rec[p:])))
	p += 4
	if bodyLen < 0 || bodyLen > len(rec)-p-3 {
		return fmt.Errorf("%w: body length %d does not fit in a record of %d bytes", ErrCorrupt, bodyLen, len(rec))
	}
	r.Body = rec[p : p+bodyLen]
	p += bodyLen
	topicLen := int(int8(rec[p]))
	p++
	if topicLen < 0 || topicLen > len(rec)-p-2 {
		return fmt.Errorf("%w: topic length %d does not fit", ErrCorrupt, topicLen)
	}
	r.Topic = rec[p : p+topicLen]
	p += topicLen
	propsLen := int(int16(be.Uint16(rec[p:])))
	p += 2
	if propsLen < 0 || propsLen > len(rec)-p {
		return fmt.Errorf("%w: properties length %d does not fit", ErrCorrupt, propsLen)
	}
	r.Properties = rec[p : p+propsLen]
	if want := Length(r.SysFlag, bodyLen, topicLen, propsLen); want != len(rec) {
		return fmt.Errorf("%w: total size %d, fields add up to %d", ErrCorrupt, len(rec), want)
	}
	return nil
}

// SectorSize is the unit in which a disk may tear a page on power loss.
const SectorSize = 512

// checkTornSectors rejects a record with a torn sector. A power cut can
// leave any 512-byte sector of an unsynced page old while its neighbours
// are new. In the CommitLog "old" is always zeros past the last record
// that reached the disk: files are created zero-filled, and recovery zeroes
// and syncs everything past the recovered end before appending. So a torn
// record has a sector (aligned on absolute CommitLog offsets, which file
// boundaries preserve) whose bytes of the record are all zero.
//
// The body CRC covers every sector holding body bytes (together with the
// TOTALSIZE/field-length consistency, which covers the header bytes such a
// sector may also hold). Every other sector holds only header, topic or
// property bytes, and those are never all zero in a record written whole:
// the first sector holds TOTALSIZE and the magic (or only high bytes of
// TOTALSIZE, zero legitimately, when the magic is in the next sector, which
// is then checked by the magic itself); a later one that starts
// inside the header holds BODYLEN and the body or the topic length; one
// that starts after the body holds topic or property bytes, which cannot
// be NUL (Prepare refuses NUL in topics and properties), or only the
// 2-byte length of empty properties, which is 0 legitimately. Skipping
// such legitimately-zero sectors loses nothing: torn or not, they read the
// same.
func (r *Info) checkTornSectors(rec []byte, pos int64) error {
	n := int64(len(rec))
	bodyStart := int64(len(rec) - len(r.Topic) - len(r.Properties) - 3 - len(r.Body))
	bodyEnd := bodyStart + int64(len(r.Body))
	propsLenAt := n - int64(len(r.Properties)) - 2
	for s := pos - pos%SectorSize; s < pos+n; s += SectorSize {
		lo, hi := max(s, pos)-pos, min(s+SectorSize, pos+n)-pos
		if lo < bodyEnd && hi > bodyStart {
			// This sector and the next ones up to the one holding the
			// body's last byte hold body bytes: the CRC covers them.
			if last := pos + bodyEnd - 1; last > s {
				s = last - last%SectorSize
			}
			continue
		}
		if !allZero(rec[lo:hi]) {
			continue
		}
		if hi < 4 || (len(r.Properties) == 0 && lo >= propsLenAt) {
			// Only the high bytes of TOTALSIZE (zero below 16 MiB), or
			// only the length of empty properties: zero legitimately.
			continue
		}
		return fmt.Errorf("%w: torn sector at %d: record bytes [%d,%d) are all zero", ErrCorrupt, s, lo, hi)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// MessageExt is a decoded record that owns its memory.
type MessageExt struct {
	Message
	// StoreSize is TOTALSIZE.
	StoreSize       int32
	BodyCRC         int32
	QueueOffset     int64
	CommitLogOffset int64
	StoreTimestamp  int64
	StoreHost       netip.AddrPort
}

// MsgID returns the offset message id (store host + commitlog offset).
func (m *MessageExt) MsgID() string { return OffsetMsgID(m.StoreHost, m.CommitLogOffset) }

// Decode checks the record at the start of buf (see Check) and copies it
// into a MessageExt.
func Decode(buf []byte, pos int64, checkCRC bool) (*MessageExt, error) {
	r, err := Check(buf, pos, checkCRC)
	if err != nil {
		return nil, err
	}
	if r.Blank {
		return nil, fmt.Errorf("%w: blank record where a message was expected", ErrCorrupt)
	}
	return r.Ext(), nil
}

// Ext copies a checked record into a MessageExt.
func (r *Info) Ext() *MessageExt {
	m := &MessageExt{
		Message: Message{
			Topic:                     string(r.Topic),
			QueueID:                   r.QueueID,
			Flag:                      r.Flag,
			Body:                      append([]byte(nil), r.Body...),
			Properties:                ParseProperties(r.Properties),
			SysFlag:                   r.SysFlag,
			BornTimestamp:             r.BornTimestamp,
			BornHost:                  parseHost(r.BornHost),
			ReconsumeTimes:            r.ReconsumeTimes,
			PreparedTransactionOffset: r.PreparedTransactionOffset,
		},
		StoreSize:       r.Size,
		BodyCRC:         r.BodyCRC,
		QueueOffset:     r.QueueOffset,
		CommitLogOffset: r.PhysicalOffset,
		StoreTimestamp:  r.StoreTimestamp,
		StoreHost:       parseHost(r.StoreHost),
	}
	return m
}

func parseHost(b []byte) netip.AddrPort {
	n := len(b) - 4
	port := uint16(be.Uint32(b[n:]))
	a, _ := netip.AddrFromSlice(b[:n])
	return netip.AddrPortFrom(a, port)
}

// VerifyBodyCRC checks the body CRC of rec, a record of exactly TOTALSIZE
// bytes that already passed CheckWith without the CRC (its lengths are
// consistent): the CRC half of a check split from the rest, as recovery
// splits it between two goroutines.
func VerifyBodyCRC(rec []byte) error {
	if len(rec) < FixedOverhead {
		return fmt.Errorf("%w: %d bytes is not a checked record", ErrCorrupt, len(rec))
	}
	_, _, p := hostOffsets(int32(be.Uint32(rec[offSysFlag:])))
	if p+4 > len(rec) {
		return fmt.Errorf("%w: %d bytes is not a checked record", ErrCorrupt, len(rec))
	}
	bodyLen := int(int32(be.Uint32(rec[p:])))
	p += 4
	if bodyLen < 0 || bodyLen > len(rec)-p {
		return fmt.Errorf("%w: body length %d does not fit in a record of %d bytes", ErrCorrupt, bodyLen, len(rec))
	}
	want := int32(be.Uint32(rec[offBodyCRC:]))
	if crc := BodyCRC(rec[p : p+bodyLen]); crc != want {
		return fmt.Errorf("%w: body crc %08x, want %08x", ErrCorrupt, crc, want)
	}
	return nil
}
