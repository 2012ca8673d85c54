package record

import (
	"errors"
	"testing"
)

func TestTimerUnitRoundTrip(t *testing.T) {
	u := TimerUnit{PrevPos: 52, Magic: TimerMagicDefault | TimerMagicDelete, WriteMs: 1700000000000, Delay: 2500,
		OffsetPy: 4096, SizePy: 218, TopicHash: JavaStringHashCode("T")}
	b := make([]byte, TimerUnitSize)
	PutTimerUnit(b, u)
	got, err := DecodeTimerUnit(b, 104)
	if err != nil || got != u || got.SlotTime() != 1700000002500 || !got.IsDelete() {
		t.Fatalf("%+v %v", got, err)
	}
	// A unit's previous unit is before it; a unit needs its magic, size
	// and a record.
	for name, damage := range map[string]func(b []byte){
		"size":  func(b []byte) { b[3] = 51 },
		"magic": func(b []byte) { b[offTimerUnitMagic+3] = 0 },
		"short": nil,
	} {
		c := append([]byte(nil), b...)
		if damage != nil {
			damage(c)
		} else {
			c = c[:TimerUnitSize-1]
		}
		if _, err := DecodeTimerUnit(c, 104); !errors.Is(err, ErrBadTimerUnit) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeTimerUnit(b, 52); !errors.Is(err, ErrBadTimerUnit) {
		t.Error("a unit whose previous unit is itself decoded")
	}
	s := TimerSlot{TimeMs: 1700000002000, FirstPos: 0, LastPos: 520, Num: 11}
	PutTimerSlot(b, s)
	if got := DecodeTimerSlot(b); got != s {
		t.Fatalf("slot %+v", got)
	}
}

func FuzzDecodeTimerUnit(f *testing.F) {
	b := make([]byte, TimerUnitSize)
	PutTimerUnit(b, TimerUnit{PrevPos: -1, Magic: TimerMagicDefault, WriteMs: 1, OffsetPy: 1, SizePy: 100})
	f.Add(b, int64(52))
	f.Fuzz(func(t *testing.T, b []byte, pos int64) {
		u, err := DecodeTimerUnit(b, pos)
		if err != nil {
			return
		}
		c := make([]byte, TimerUnitSize)
		PutTimerUnit(c, u)
		if again, err := DecodeTimerUnit(c, pos); err != nil || again != u {
			t.Fatalf("%+v does not round-trip", u)
		}
	})
}
