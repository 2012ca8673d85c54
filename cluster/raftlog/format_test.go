package raftlog

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// FuzzDecodeFrame feeds arbitrary bytes to the frame decoder: it returns
// a frame, the end, or ErrCorrupt, never panics, and a frame it accepts
// encodes back to the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(appendFrame(nil, sideLog(7, 2, "state"), false, true))
	f.Add(appendFrame(nil, recordsLog(3, 1, 99, "r"), true, false))
	f.Add(appendHead(nil, 5, 1024))
	f.Add(appendRoll(nil))
	f.Add([]byte{0, 0, 0, 40})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := decodeFrame(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, errEnd) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor the end", err)
			}
			return
		}
		if fr.typ != frameSide {
			return
		}
		var l raft.Log
		fr.sideLog(&l)
		if got := appendFrame(nil, &l, false, fr.first); string(got) != string(b[:n]) {
			t.Fatalf("frame %x re-encodes as %x", b[:n], got)
		}
	})
}
