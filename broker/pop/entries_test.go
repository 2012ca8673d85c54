package pop

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestEntryTableIsAMap runs random sets and deletes on an entryTable and
// on a map, with offsets that go on from the last (as deliveries do),
// jump ahead past maxGap, go back below the window, or hit an offset
// that has an entry, and checks after each step that both hold the same
// entries; the window's bounds made small so that runs pass them often.
func TestEntryTableIsAMap(t *testing.T) {
	defer func(w int, g int64) { maxWindow, maxGap = w, g }(maxWindow, maxGap)
	maxWindow, maxGap = 16, 4
	rapid.Check(t, func(t *rapid.T) {
		var tab entryTable
		model := map[int64]entry{}
		next := rapid.Int64Range(0, 100).Draw(t, "start")
		steps := rapid.IntRange(1, 8*maxWindow).Draw(t, "steps")
		for i := range steps {
			var off int64
			switch k := rapid.IntRange(0, 9).Draw(t, "kind"); {
			case k <= 4:
				off = next + rapid.Int64Range(0, 3).Draw(t, "ahead")
			case k == 5:
				off = next + rapid.Int64Range(maxGap-2, 2*maxGap).Draw(t, "jump")
			case k == 6:
				off = rapid.Int64Range(0, next).Draw(t, "back")
			default:
				if len(model) == 0 {
					continue
				}
				keys := slices.Sorted(maps.Keys(model))
				off = keys[rapid.IntRange(0, len(keys)-1).Draw(t, "existing")]
			}
			next = max(next, off+1)
			if _, ok := model[off]; ok && rapid.IntRange(0, 2).Draw(t, "delete") > 0 {
				tab.del(off)
				delete(model, off)
			} else {
				e := entry{attempt: int32(i%5 + 1), deadline: int64(i), ck: off}
				tab.set(off, e)
				model[off] = e
			}
			if tab.len() != len(model) {
				t.Fatalf("step %d: %d entries, want %d", i, tab.len(), len(model))
			}
			got := maps.Collect(tab.all())
			if !maps.Equal(got, model) {
				t.Fatalf("step %d: entries %v, want %v", i, got, model)
			}
			for _, probe := range []int64{off, off - 1, off + 1, tab.base, tab.base - 1} {
				e, ok := tab.get(probe)
				want, wantOK := model[probe]
				if ok != wantOK || e != want {
					t.Fatalf("step %d: get(%d) = %v %v, want %v %v", i, probe, e, ok, want, wantOK)
				}
			}
		}
		tab.reset()
		if tab.len() != 0 || len(maps.Collect(tab.all())) != 0 {
			t.Fatal("entries left after reset")
		}
	})
}
