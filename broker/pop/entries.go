package pop

import "iter"

// entryTable maps queue offsets to a queue's entries. Pop delivers a
// queue's messages in offset order and most acks come soon after, so the
// entries mostly form a short run of offsets just below the queue's
// position: the table keeps that run in a window indexed by offset
// (no hashing, no rehashing as entries come and go), and the rare
// entries far behind it (a message in flight for long while the queue
// went on) in a map.
type entryTable struct {
	// win[head:] holds the offsets from base on; win[head] is the first
	// slot with an entry (or there is none: live is 0).
	win  []slot
	head int
	base int64
	live int // entries in the window
	// far holds the entries below base.
	far map[int64]entry
}

// slot is one offset of the window.
type slot struct {
	e  entry
	ok bool
}

// maxWindow bounds the window's slots: an entry that would make it
// longer moves the window's oldest entries to the map. maxGap is the
// longest run of empty slots a new entry may open at the window's end
// (offsets filtered out, or read past); a longer one moves the window's
// entries to the map and starts a new window.
// (Variables so that a test can make them small.)
var (
	maxWindow = 4096
	maxGap    = int64(256)
)

// Invariant: every offset in far is below base, so that an offset is in
// the window or in the map, never in both.

// get returns the entry at off.
func (t *entryTable) get(off int64) (entry, bool) {
	if i := off - t.base; i >= 0 && i < int64(len(t.win)-t.head) {
		s := &t.win[t.head+int(i)]
		return s.e, s.ok
	}
	e, ok := t.far[off]
	return e, ok
}

// set stores the entry at off.
func (t *entryTable) set(off int64, e entry) {
	n := int64(len(t.win) - t.head)
	switch i := off - t.base; {
	case i >= 0 && i < n:
		s := &t.win[t.head+int(i)]
		if !s.ok {
			t.live++
		}
		s.e, s.ok = e, true
		return
	case t.live == 0 && (i >= n || len(t.far) == 0):
		// A new window at off: the map's offsets stay below it.
		t.win, t.head, t.base = t.win[:0], 0, off
	case i < 0:
		t.setFar(off, e)
		return
	case i-n > maxGap:
		t.spill(len(t.win))
		t.win, t.head, t.base = t.win[:0], 0, off
	}
	for int64(len(t.win)-t.head) < off-t.base {
		t.win = append(t.win, slot{})
	}
	t.win = append(t.win, slot{e: e, ok: true})
	t.live++
	if len(t.win)-t.head > maxWindow {
		t.spill(t.head + (len(t.win)-t.head)/2)
	}
	// Reuse the room before head once it is half the buffer.
	if t.head > 0 && t.head >= len(t.win)/2 {
		k := copy(t.win, t.win[t.head:])
		clear(t.win[k:])
		t.win, t.head = t.win[:k], 0
	}
}

// setFar stores an entry below the window in the map.
func (t *entryTable) setFar(off int64, e entry) {
	if t.far == nil {
		t.far = make(map[int64]entry)
	}
	t.far[off] = e
}

// spill moves the window's entries before win[to] to the map and starts
// the window at the next entry.
func (t *entryTable) spill(to int) {
	for i := t.head; i < to; i++ {
		if s := &t.win[i]; s.ok {
			t.setFar(t.base+int64(i-t.head), s.e)
			t.live--
		}
		t.win[i] = slot{}
	}
	t.base += int64(to - t.head)
	t.head = to
	t.trim()
}

// del removes the entry at off.
func (t *entryTable) del(off int64) {
	if i := off - t.base; i >= 0 && i < int64(len(t.win)-t.head) {
		s := &t.win[t.head+int(i)]
		if s.ok {
			*s = slot{}
			t.live--
			t.trim()
		}
		return
	}
	delete(t.far, off)
}

// trim moves the window's start to its first entry.
func (t *entryTable) trim() {
	if t.live == 0 {
		clear(t.win[t.head:])
		t.base += int64(len(t.win) - t.head)
		t.win, t.head = t.win[:0], 0
		if int64(cap(t.win)) > maxGap {
			t.win = nil // a long window's buffer is not kept while idle
		}
		return
	}
	for !t.win[t.head].ok {
		t.head++
		t.base++
	}
}

// len is the number of entries.
func (t *entryTable) len() int { return t.live + len(t.far) }

// all yields every entry, in no particular order. The table must not
// change during the iteration.
func (t *entryTable) all() iter.Seq2[int64, entry] {
	return func(yield func(int64, entry) bool) {
		for off, e := range t.far {
			if !yield(off, e) {
				return
			}
		}
		for i := t.head; i < len(t.win); i++ {
			if s := &t.win[i]; s.ok && !yield(t.base+int64(i-t.head), s.e) {
				return
			}
		}
	}
}

// reset removes every entry.
func (t *entryTable) reset() {
	clear(t.win)
	t.win, t.head, t.live = t.win[:0], 0, 0
	clear(t.far)
}
