package record

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// TimerLog unit layout (TimerLog.UNIT_SIZE; all integers big-endian). A
// unit points at one TimerTopic record of the CommitLog; the units of one
// wheel slot are chained backwards through PREVPOS:
//
//	 0 SIZE      int32  52
//	 4 PREVPOS   int64  the previous unit of the same slot, -1: none
//	12 MAGIC     int32  TimerMagicDefault | TimerMagicRoll | TimerMagicDelete
//	16 WRITEMS   int64  the time the unit was written (the wheel's write time)
//	24 DELAY     int32  slot time - WRITEMS, in ms
//	28 OFFSETPY  int64  CommitLog offset of the TimerTopic record
//	36 SIZEPY    int32  its size
//	40 TOPICHASH int32  Java hash code of its real topic
//	44 RESERVED  int64  0
//
// These values are RocketMQ's format: never change them.
const (
	TimerUnitSize = 52

	offTimerUnitSize      = 0
	offTimerUnitPrevPos   = 4
	offTimerUnitMagic     = 12
	offTimerUnitWriteMs   = 16
	offTimerUnitDelay     = 24
	offTimerUnitOffsetPy  = 28
	offTimerUnitSizePy    = 36
	offTimerUnitTopicHash = 40
)

// Magic bits of a TimerLog unit (TimerMessageStore.MAGIC_*).
const (
	TimerMagicDefault = 1
	TimerMagicRoll    = 1 << 1
	TimerMagicDelete  = 1 << 2
)

// Slot layout of the TimerWheel file (Slot.SIZE; big-endian). Slot i holds
// the slot time ≡ i (mod the slot count); a slot whose TIMEMS is not the
// time asked for is empty (left from an earlier turn of the wheel):
//
//	 0 TIMEMS   int64  the slot's delivery time, ms
//	 8 FIRSTPOS int64  TimerLog offset of its first unit
//	16 LASTPOS  int64  TimerLog offset of its last unit
//	24 NUM      int32  pending messages in it (a recall counts -1)
//	28 MAGIC    int32  unused, 0
const (
	TimerSlotSize = 32

	offSlotTimeMs   = 0
	offSlotFirstPos = 8
	offSlotLastPos  = 16
	offSlotNum      = 24
)

// ErrBadTimerUnit reports TimerLog bytes that are not a unit.
var ErrBadTimerUnit = errors.New("record: bad timer log unit")

// TimerUnit is one TimerLog unit.
type TimerUnit struct {
	PrevPos   int64
	Magic     int32
	WriteMs   int64
	Delay     int32
	OffsetPy  int64
	SizePy    int32
	TopicHash int32
}

// SlotTime returns the delivery time of the unit's slot.
func (u TimerUnit) SlotTime() int64 { return u.WriteMs + int64(u.Delay) }

// IsDelete reports whether the unit is a recall.
func (u TimerUnit) IsDelete() bool { return u.Magic&TimerMagicDelete != 0 }

// PutTimerUnit encodes u into b[:TimerUnitSize].
func PutTimerUnit(b []byte, u TimerUnit) {
	be := binary.BigEndian
	be.PutUint32(b[offTimerUnitSize:], TimerUnitSize)
	be.PutUint64(b[offTimerUnitPrevPos:], uint64(u.PrevPos))
	be.PutUint32(b[offTimerUnitMagic:], uint32(u.Magic))
	be.PutUint64(b[offTimerUnitWriteMs:], uint64(u.WriteMs))
	be.PutUint32(b[offTimerUnitDelay:], uint32(u.Delay))
	be.PutUint64(b[offTimerUnitOffsetPy:], uint64(u.OffsetPy))
	be.PutUint32(b[offTimerUnitSizePy:], uint32(u.SizePy))
	be.PutUint32(b[offTimerUnitTopicHash:], uint32(u.TopicHash))
	clear(b[offTimerUnitTopicHash+4 : TimerUnitSize])
}

// DecodeTimerUnit decodes the unit at the start of b. pos (its TimerLog
// offset) only names the place in an error.
func DecodeTimerUnit(b []byte, pos int64) (TimerUnit, error) {
	if len(b) < TimerUnitSize {
		return TimerUnit{}, fmt.Errorf("%w at %d: %d bytes", ErrBadTimerUnit, pos, len(b))
	}
	be := binary.BigEndian
	if size := int32(be.Uint32(b)); size != TimerUnitSize {
		return TimerUnit{}, fmt.Errorf("%w at %d: size %d", ErrBadTimerUnit, pos, size)
	}
	u := TimerUnit{
		PrevPos:   int64(be.Uint64(b[offTimerUnitPrevPos:])),
		Magic:     int32(be.Uint32(b[offTimerUnitMagic:])),
		WriteMs:   int64(be.Uint64(b[offTimerUnitWriteMs:])),
		Delay:     int32(be.Uint32(b[offTimerUnitDelay:])),
		OffsetPy:  int64(be.Uint64(b[offTimerUnitOffsetPy:])),
		SizePy:    int32(be.Uint32(b[offTimerUnitSizePy:])),
		TopicHash: int32(be.Uint32(b[offTimerUnitTopicHash:])),
	}
	if u.Magic&TimerMagicDefault == 0 || u.OffsetPy < 0 || u.SizePy <= 0 || u.PrevPos < -1 || u.PrevPos >= pos {
		return TimerUnit{}, fmt.Errorf("%w at %d: magic %d, offset %d, size %d, prev %d", ErrBadTimerUnit, pos, u.Magic, u.OffsetPy, u.SizePy, u.PrevPos)
	}
	return u, nil
}

// TimerSlot is one slot of the TimerWheel.
type TimerSlot struct {
	TimeMs   int64
	FirstPos int64
	LastPos  int64
	Num      int32
}

// PutTimerSlot encodes s into b[:TimerSlotSize].
func PutTimerSlot(b []byte, s TimerSlot) {
	be := binary.BigEndian
	be.PutUint64(b[offSlotTimeMs:], uint64(s.TimeMs))
	be.PutUint64(b[offSlotFirstPos:], uint64(s.FirstPos))
	be.PutUint64(b[offSlotLastPos:], uint64(s.LastPos))
	be.PutUint32(b[offSlotNum:], uint32(s.Num))
	clear(b[offSlotNum+4 : TimerSlotSize])
}

// DecodeTimerSlot decodes the slot at the start of b (TimerSlotSize bytes).
func DecodeTimerSlot(b []byte) TimerSlot {
	be := binary.BigEndian
	return TimerSlot{
		TimeMs:   int64(be.Uint64(b[offSlotTimeMs:])),
		FirstPos: int64(be.Uint64(b[offSlotFirstPos:])),
		LastPos:  int64(be.Uint64(b[offSlotLastPos:])),
		Num:      int32(be.Uint32(b[offSlotNum:])),
	}
}
