package proptest

import (
	"errors"

	"pgregory.net/rapid"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
)

// recovery modes: what may have been lost before the store reopened.
const (
	afterRestart = iota // clean Close: nothing lost
	afterKill           // process died, page cache kept: nothing lost
	afterCrash          // power cut: only what is durable is guaranteed
)

// resetInjection removes every injector from the machine's FS.
func (m *machine) resetInjection() {
	m.fs.SetInjector(nil)
	m.armed, m.faultArmed = false, false
}

// restart closes the store cleanly (draining dispatch first, as a running
// store does) and reopens it on the same FS.
func (m *machine) restart() {
	m.stats.restarts.Add(1)
	if !m.md.failed {
		m.actDispatch(nil)
	}
	err := m.s.Close()
	m.engineErr("Close", err)
	if err == nil && !m.md.failed {
		m.md.markAllDurable()
	}
	m.fs.Kill() // a failed Close leaves handles and locks behind
	m.reopen(afterRestart)
}

// kill abandons the store as if its process died, and reopens the FS.
func (m *machine) kill() {
	m.stats.kills.Add(1)
	m.fs.Kill()
	m.reopen(afterKill)
}

func (m *machine) reopen(mode int) {
	m.resetInjection()
	m.s = m.mustOpen(m.fs, "reopen")
	m.md.failed = false
	m.verify(mode)
}

// crash cuts the power now: the store is abandoned, the disk image is
// drawn by rapid, and recovery runs on a new FS holding it.
func (m *machine) crash(atWrite bool) {
	m.stats.crashes.Add(1)
	if atWrite {
		m.stats.crashesAtWrite.Add(1)
	}
	img := m.fs.Crash(crashsim.RapidChooser{T: m.t})
	m.recoverImage(img)
}

// recoverImage recovers a crash image and checks P1–P5 on the result.
func (m *machine) recoverImage(img afero.Fs) {
	cp := readCheckpoint(img)
	ref := m.checkRecoveryIdempotent(img)
	m.checkRecoveryFromZero(img, ref)
	fs := m.maybeCrashDuringRecovery(img)
	m.s = m.mustOpen(fs, "recovery")
	m.fs = fs
	m.resetInjection()
	m.md.failed = false
	if got := storeFiles(fs); !sameFiles(got, ref, false) {
		m.t.Fatalf("P4: recovery interrupted by a crash and redone differs from one recovery:\n%s", diffFiles(got, ref))
	}
	m.verify(afterCrash)
	m.checkCheckpoint(cp)
	m.stats.recoveries.Add(1)
}

// openImage opens a store on a fresh FS holding img; prepare may delete
// files first.
func (m *machine) openImage(img afero.Fs, why string, prepare func(*crashsim.FS)) (*crashsim.FS, *engine.Store) {
	fs, err := crashsim.New(img, m.st.fsOpts)
	if err != nil {
		m.t.Fatal(err)
	}
	if prepare != nil {
		prepare(fs)
	}
	return fs, m.mustOpen(fs, why)
}

// checkRecoveryIdempotent is P4's first half: recovering a recovered store
// (after a kill) changes no byte. It returns the files after recovery.
func (m *machine) checkRecoveryIdempotent(img afero.Fs) map[string][]byte {
	fs, _ := m.openImage(img, "reference recovery", nil)
	first := storeFiles(fs)
	fs.Kill()
	m.mustOpen(fs, "second recovery")
	if second := storeFiles(fs); !sameFiles(first, second, false) {
		m.t.Fatalf("P4: recovering twice changed the files:\n%s", diffFiles(first, second))
	}
	return first
}

// checkRecoveryFromZero is P5's second half and P3's rebuild: recovery
// without the checkpoint (from CommitLog offset 0), and with the
// ConsumeQueues deleted too, give the same CommitLog and ConsumeQueues as
// recovery from the checkpoint. Empty ConsumeQueue files are ignored: a
// queue whose messages were all lost keeps an empty file in one and no
// file in the other.
func (m *machine) checkRecoveryFromZero(img afero.Fs, ref map[string][]byte) {
	noCP := func(fs *crashsim.FS) { _ = fs.Remove("checkpoint") }
	fs, _ := m.openImage(img, "recovery without checkpoint", noCP)
	if got := storeFiles(fs); !sameFiles(got, ref, true) {
		m.t.Fatalf("P5: recovery from offset 0 differs from recovery from the checkpoint:\n%s", diffFiles(got, ref))
	}
	rebuild := func(fs *crashsim.FS) { noCP(fs); _ = fs.RemoveAll("consumequeue") }
	fs, _ = m.openImage(img, "rebuild", rebuild)
	if got := storeFiles(fs); !sameFiles(got, ref, true) {
		m.t.Fatalf("P3: consume queues differ from the ones rebuilt from the commitlog:\n%s", diffFiles(got, ref))
	}
}

// maybeCrashDuringRecovery returns a fresh FS holding img, or, when rapid
// so draws, the image left by a power cut at the k-th mutating operation
// of a recovery of img.
func (m *machine) maybeCrashDuringRecovery(img afero.Fs) *crashsim.FS {
	k := rapid.IntRange(0, 12).Draw(m.t, "crashInRecoveryAtOp")
	fs, err := crashsim.New(img, m.st.fsOpts)
	if err != nil {
		m.t.Fatal(err)
	}
	if k == 0 {
		return fs
	}
	fs.SetInjector(crashsim.CrashWhen(crashsim.Nth(k, crashsim.Mutating())))
	s, err := engine.Open(fs, m.config())
	if err == nil || (errors.Is(err, engine.ErrUndecidableDamage) && !fs.Frozen()) {
		_ = s // recovery finished (or refused) before the k-th operation: no crash
		fs.Kill()
		return fs
	}
	if !fs.Frozen() {
		m.t.Fatalf("recovery failed without a fault: %v", err)
	}
	m.stats.crashesInRecovery.Add(1)
	img2 := fs.Crash(crashsim.RapidChooser{T: m.t})
	fs2, err := crashsim.New(img2, m.st.fsOpts)
	if err != nil {
		m.t.Fatal(err)
	}
	return fs2
}
