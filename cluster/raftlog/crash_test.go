package raftlog

import (
	"flag"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/crashsim"
)

// logModel is the log as the acknowledged calls left it.
type logModel struct {
	ents []*raft.Log
	// next is the index the next entry gets; term its term.
	next, term uint64
	recEnd     int64
	// compacted are the entries a head delete dropped: committed ones,
	// which may come back below the first index (see deleteTail).
	compacted map[uint64]*raft.Log
}

func (m logModel) clone() logModel {
	m.ents = slices.Clone(m.ents)
	c := make(map[uint64]*raft.Log, len(m.compacted))
	for i, l := range m.compacted {
		c[i] = l
	}
	m.compacted = c
	return m
}

func (m logModel) at(index uint64) *raft.Log {
	if len(m.ents) == 0 || index < m.ents[0].Index || index > m.ents[len(m.ents)-1].Index {
		return nil
	}
	return m.ents[index-m.ents[0].Index]
}

// crashOp is one call against the store and its effect on the model.
type crashOp struct {
	name string
	run  func(*Store) error
	// after is the model once the call has returned.
	after logModel
}

// drawOp draws a call valid in m: store a few entries, delete a head, or
// delete a tail (after which the term goes up, as under a new leader).
func drawOp(t *rapid.T, m logModel, i int) crashOp {
	n := len(m.ents)
	kind := rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("op%d", i))
	switch {
	case kind == 4 && n > 0:
		k := rapid.IntRange(1, n).Draw(t, fmt.Sprintf("head%d", i))
		min, max := m.ents[0].Index, m.ents[k-1].Index
		a := m.clone()
		for _, l := range a.ents[:k] {
			a.compacted[l.Index] = l
		}
		a.ents = a.ents[k:]
		if len(a.ents) == 0 && rapid.Bool().Draw(t, fmt.Sprintf("snapshot%d", i)) {
			a.next += 10 // a snapshot install: the log restarts further on
		}
		return crashOp{name: fmt.Sprintf("DeleteRange(%d, %d)", min, max), run: func(s *Store) error { return s.DeleteRange(min, max) }, after: a}
	case kind == 5 && n > 1:
		k := rapid.IntRange(1, n-1).Draw(t, fmt.Sprintf("tail%d", i))
		min, max := m.ents[n-k].Index, m.ents[n-1].Index
		a := m.clone()
		a.ents, a.next, a.term = a.ents[:n-k], min, a.term+1
		// The records end where the first deleted records entry began.
		for _, l := range m.ents[n-k:] {
			if off, _, ok := recordsOf(l); ok {
				a.recEnd = off
				break
			}
		}
		return crashOp{name: fmt.Sprintf("DeleteRange(%d, %d)", min, max), run: func(s *Store) error { return s.DeleteRange(min, max) }, after: a}
	}
	a := m.clone()
	var batch []*raft.Log
	for j := range rapid.IntRange(1, 4).Draw(t, fmt.Sprintf("batch%d", i)) {
		var l *raft.Log
		if rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("side%d.%d", i, j)) == 0 {
			l = sideLog(a.next, a.term, fmt.Sprintf("side entry %d of %d bytes %s", a.next, a.term, make([]byte, rapid.IntRange(0, 300).Draw(t, "pad"))))
		} else {
			l = recordsLog(a.next, a.term, a.recEnd, fmt.Sprintf("rec %d/%d", a.next, a.term), "second")
			a.recEnd += recordsSize(l)
		}
		batch = append(batch, l)
		a.ents = append(a.ents, l)
		a.next++
	}
	return crashOp{name: fmt.Sprintf("StoreLogs(%d..%d)", batch[0].Index, a.next-1), run: func(s *Store) error { return s.StoreLogs(batch) }, after: a}
}

// TestPowerCutProperty cuts the power at a drawn file-system operation
// while a drawn sequence of stores and deletes runs on a crash-simulating
// FS, and reopens the crash image: every entry the log holds is the one
// the calls before or after the interrupted one left at its index (or a
// compacted one, below the first index), every entry both left is there, the records end where the last records entry
// ends, and the store goes on appending.
func TestPowerCutProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		if err := powerCutOnce(t, false); err != nil {
			t.Fatal(err)
		}
	})
	// The broken variant trusts the frames of the last StoreLogs at Open
	// without checking their records: a power cut can keep such a frame
	// and lose its records.
	var caught failRecorder
	// Its failure is expected: no fail file, and a short shrink.
	setFlag(t, "rapid.nofailfile", "true")
	setFlag(t, "rapid.shrinktime", "1s")
	// A cut that tells needs a frame synced while its records are not:
	// about one case in 40 draws one, so the variant runs 2,000 (each
	// stops at the first counterexample; 100 missed it in 2 of 30 runs).
	setFlag(t, "rapid.checks", "2000")
	done := make(chan struct{})
	go func() {
		defer close(done)
		rapid.Check(&caught, func(t *rapid.T) {
			if err := powerCutOnce(t, true); err != nil {
				t.Fatal(err)
			}
		})
	}()
	<-done
	if !caught.failed {
		t.Fatal("broken variant (the last StoreLogs's records not checked at Open) passed; the test cannot tell")
	}
	t.Logf("broken variant caught: %s", caught.first)
}

// setFlag sets a command-line flag for the rest of the test.
func setFlag(t *testing.T, name, value string) {
	old := flag.Lookup(name).Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set(name, old) })
}

// failRecorder is a rapid.TB that records a failure instead of failing
// the test, for the broken variants. Its FailNow ends the goroutine, as
// testing.T's does.
type failRecorder struct {
	failed bool
	first  string
}

func (r *failRecorder) Helper()                   {}
func (r *failRecorder) Name() string              { return "broken variant" }
func (r *failRecorder) Logf(string, ...any)       {}
func (r *failRecorder) Log(...any)                {}
func (r *failRecorder) Skipf(string, ...any)      { runtime.Goexit() }
func (r *failRecorder) Skip(...any)               { runtime.Goexit() }
func (r *failRecorder) SkipNow()                  { runtime.Goexit() }
func (r *failRecorder) Errorf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)) }
func (r *failRecorder) Error(a ...any)            { r.fail(fmt.Sprint(a...)) }
func (r *failRecorder) Fatalf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)); runtime.Goexit() }
func (r *failRecorder) Fatal(a ...any)            { r.fail(fmt.Sprint(a...)); runtime.Goexit() }
func (r *failRecorder) FailNow()                  { r.failed = true; runtime.Goexit() }
func (r *failRecorder) Fail()                     { r.failed = true }
func (r *failRecorder) Failed() bool              { return r.failed }

func (r *failRecorder) fail(msg string) {
	if !r.failed {
		r.first = msg
	}
	r.failed = true
}

// powerCutOnce runs one drawn case; noRecordsCheck reopens the crash
// image with the broken variant brokenNoRecordsCheck.
func powerCutOnce(t *rapid.T, noRecordsCheck bool) error {
	fs, err := crashsim.New(nil, crashsim.Options{DurableMkdir: true})
	if err != nil {
		return err
	}
	segSize := int64(rapid.SampledFrom([]int{256, 512, 4096}).Draw(t, "segSize"))
	fs.SetInjector(crashsim.CrashWhen(crashsim.Nth(rapid.IntRange(1, 150).Draw(t, "crashAt"), crashsim.Mutating())))
	m := logModel{next: 1, term: 1, compacted: map[uint64]*raft.Log{}}
	before, after := m, m
	var trace []string
	// The records and the frames are synced one after the other, in a
	// drawn order, so that a seed replays the same operations.
	h := &harness{fsys: fs, segSize: segSize, syncsInOrder: func() bool { return rapid.Bool().Draw(t, "recordsFirst") }}
	if err := h.open(); err == nil {
		for i := range rapid.IntRange(1, 12).Draw(t, "ops") {
			op := drawOp(t, m, i)
			trace = append(trace, op.name)
			before, after = m, op.after
			if err := op.run(h.s); err != nil {
				if !fs.Frozen() {
					return fmt.Errorf("%v: %w", trace, err)
				}
				break
			}
			m = op.after
			before = m
		}
	} else if !fs.Frozen() {
		return err
	}
	fs.Freeze()
	img := fs.Crash(crashsim.RapidChooser{T: t})
	fs2, err := crashsim.New(img, crashsim.Options{DurableMkdir: true})
	if err != nil {
		return err
	}
	h = &harness{fsys: fs2, segSize: segSize, noRecordsCheck: noRecordsCheck}
	if err := h.open(); err != nil {
		return fmt.Errorf("reopen after %v: %w", trace, err)
	}
	defer h.close()
	got, err := checkRecovered(h, before, after)
	if err != nil {
		return fmt.Errorf("after %v: %w", trace, err)
	}
	return goOn(h, got)
}

// checkRecovered checks the recovered log against the two states the
// interrupted call could leave, and returns it.
func checkRecovered(h *harness, before, after logModel) ([]*raft.Log, error) {
	first, _ := h.s.FirstIndex()
	last, _ := h.s.LastIndex()
	var got []*raft.Log
	for i := first; i <= last && last > 0; i++ {
		var l raft.Log
		if err := h.s.GetLog(i, &l); err != nil {
			return nil, fmt.Errorf("entry %d of %d..%d: %w", i, first, last, err)
		}
		b, a := before.at(i), after.at(i)
		c := after.compacted[i]
		if (b == nil || sameLog(&l, b) != nil) && (a == nil || sameLog(&l, a) != nil) && (c == nil || sameLog(&l, c) != nil) {
			return nil, fmt.Errorf("entry %d/%d is neither the one before, nor the one after, nor a compacted one", l.Index, l.Term)
		}
		got = append(got, &l)
	}
	for _, b := range before.ents {
		if a := after.at(b.Index); a != nil && sameLog(a, b) == nil {
			if l := atIndex(got, b.Index); l == nil {
				return nil, fmt.Errorf("entry %d, kept by the calls, is lost (log %d..%d)", b.Index, first, last)
			}
		}
	}
	for _, l := range slices.Backward(got) {
		if off, recs, ok := recordsOf(l); ok {
			if end := off + int64(len(recs)); h.recs.End() != end {
				return nil, fmt.Errorf("records end at %d, the last records entry %d at %d", h.recs.End(), l.Index, end)
			}
			break
		}
	}
	return got, nil
}

func atIndex(ls []*raft.Log, index uint64) *raft.Log {
	for _, l := range ls {
		if l.Index == index {
			return l
		}
	}
	return nil
}

// goOn appends after the recovered log, reopens, and compares.
func goOn(h *harness, got []*raft.Log) error {
	// An empty log restarts wherever Raft says, after a snapshot whose
	// term may be below the deleted entries'.
	next, term := uint64(1), uint64(1)
	if len(got) > 0 {
		next, term = got[len(got)-1].Index+1, got[len(got)-1].Term+1
	}
	more := []*raft.Log{recordsLog(next, term, h.recs.End(), "after the crash"), sideLog(next+1, term, "side after the crash")}
	if err := h.s.StoreLogs(more); err != nil {
		return fmt.Errorf("store after the recovered log: %w", err)
	}
	want := append(got, more...)
	if err := h.close(); err != nil {
		return err
	}
	if err := h.open(); err != nil {
		return err
	}
	if err := checkLog(h.s, want); err != nil {
		return fmt.Errorf("after appending to the recovered log: %w", err)
	}
	return nil
}
