package backend_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// put writes name with data, synced, bypassing WriteFileAtomic.
func put(t *testing.T, fs backend.FS, name string, data []byte) {
	t.Helper()
	seg, err := fs.Create(name, int64(len(data)))
	must(t, err)
	_, err = seg.WriteAt(data, 0)
	must(t, err)
	must(t, seg.Sync(0, seg.Size()))
	must(t, seg.Close())
}

func read(t *testing.T, fs backend.FS, name string) string {
	t.Helper()
	data, err := backend.ReadFile(fs, name)
	must(t, err)
	return string(data)
}

func TestReadFile(t *testing.T) {
	fs := memfs.New(nil)
	put(t, fs, "a", []byte("hello"))
	put(t, fs, "empty", nil)
	if got := read(t, fs, "a"); got != "hello" {
		t.Errorf("ReadFile(a) = %q", got)
	}
	if got := read(t, fs, "empty"); got != "" {
		t.Errorf("ReadFile(empty) = %q", got)
	}
	if _, err := backend.ReadFile(fs, "missing"); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("ReadFile(missing): %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	fs := memfs.New(nil)
	must(t, fs.MkdirAll("config"))
	const name = "config/topics.json"

	must(t, backend.WriteFileAtomic(fs, name, []byte("v1")))
	if _, err := fs.Stat(name + ".bak"); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("first write made a backup: %v", err)
	}
	must(t, backend.WriteFileAtomic(fs, name, []byte("v2")))
	if got, bak := read(t, fs, name), read(t, fs, name+".bak"); got != "v2" || bak != "v1" {
		t.Errorf("after v2: name %q, bak %q; want v2, v1", got, bak)
	}
	names, err := fs.List("config")
	must(t, err)
	if fmt.Sprint(names) != "[topics.json topics.json.bak]" {
		t.Errorf("List = %q, want no tmp file", names)
	}

	// Synced: a power cut keeps both.
	after := memfs.New(fs.Afero())
	if got := read(t, after, name); got != "v2" {
		t.Errorf("after the cut: %q", got)
	}
}

func TestWriteFileAtomicReplacesStaleTmp(t *testing.T) {
	fs := memfs.New(nil)
	put(t, fs, "c.tmp", []byte("half-written garbage"))
	must(t, backend.WriteFileAtomic(fs, "c", []byte("new")))
	if got := read(t, fs, "c"); got != "new" {
		t.Errorf("c = %q", got)
	}
}

func TestWriteFileAtomicKeepsBackupOverEmptyFile(t *testing.T) {
	fs := memfs.New(nil)
	put(t, fs, "c", nil) // emptied by an earlier crash
	put(t, fs, "c.bak", []byte("good"))
	must(t, backend.WriteFileAtomic(fs, "c", []byte("new")))
	if bak := read(t, fs, "c.bak"); bak != "good" {
		t.Errorf("c.bak = %q, want the good backup kept", bak)
	}
}

func TestReadFileWithBackup(t *testing.T) {
	tests := []struct {
		name       string
		file, bak  []byte // nil: missing
		want       string
		fromBackup bool
		err        error
	}{
		{"both", []byte("new"), []byte("old"), "new", false, nil},
		{"no backup", []byte("new"), nil, "new", false, nil},
		{"file missing", nil, []byte("old"), "old", true, nil},
		{"file empty", []byte{}, []byte("old"), "old", true, nil},
		{"file empty, no backup", []byte{}, nil, "", false, nil},
		{"both missing", nil, nil, "", false, backend.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := memfs.New(nil)
			if tc.file != nil {
				put(t, fs, "c", tc.file)
			}
			if tc.bak != nil {
				put(t, fs, "c.bak", tc.bak)
			}
			data, fromBackup, err := readFileWithBackup(fs, "c")
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if string(data) != tc.want || fromBackup != tc.fromBackup {
				t.Errorf("= %q, %v; want %q, %v", data, fromBackup, tc.want, tc.fromBackup)
			}
		})
	}
	fs := memfs.New(nil)
	put(t, fs, "c", []byte("corrupt"))
	put(t, fs, "c.bak", []byte("old"))
	if data, err := backend.ReadBackup(fs, "c"); err != nil || string(data) != "old" {
		t.Errorf("ReadBackup = %q, %v", data, err)
	}
}

// errCrash marks the operations that a crash stopped.
var errCrash = errors.New("crashed")

// crashFS stops at the crashAt-th namespace operation (counting from 0):
// that one and all later ones fail. Before the crash it may also drop
// renames, as a crash would if it came before the directory sync.
type crashFS struct {
	backend.FS
	ops, crashAt int
	drop         map[int]bool // renames to skip, numbered from 1
	renames      int
}

func (c *crashFS) step() error {
	c.ops++
	if c.ops > c.crashAt {
		return errCrash
	}
	return nil
}

func (c *crashFS) Create(name string, size int64) (backend.Segment, error) {
	if err := c.step(); err != nil {
		return nil, err
	}
	return c.FS.Create(name, size)
}

func (c *crashFS) Remove(name string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.FS.Remove(name)
}

func (c *crashFS) Rename(oldname, newname string) error {
	if err := c.step(); err != nil {
		return err
	}
	c.renames++
	if c.drop[c.renames] {
		return nil // lost: only valid because the crash precedes SyncDir
	}
	return c.FS.Rename(oldname, newname)
}

func (c *crashFS) SyncDir(dir string) error {
	if err := c.step(); err != nil {
		return err
	}
	if len(c.drop) > 0 {
		// A lost rename means the crash came before the directory sync.
		return errCrash
	}
	return c.FS.SyncDir(dir)
}

// TestWriteFileAtomicCrashes crashes WriteFileAtomic after each of its
// namespace operations (Remove tmp, Create tmp, Rename name→bak, Rename
// tmp→name, SyncDir), losing any subset of the renames that the crash
// precedes, and checks that ReadFileWithBackup then returns the old or the
// new content, never the older backup.
func TestWriteFileAtomicCrashes(t *testing.T) {
	drops := []map[int]bool{nil, {1: true}, {2: true}, {1: true, 2: true}}
	for _, prior := range []string{"none", "old", "old+older"} {
		for _, drop := range drops {
			for crashAt := 0; ; crashAt++ {
				if done := crashOnce(t, prior, crashAt, drop); done {
					break
				}
			}
		}
	}
}

// crashOnce runs one crash case and reports whether WriteFileAtomic ran to
// completion, i.e. crashAt is past its last operation. A case that -run
// filters out counts as done, so that the caller's loop ends.
func crashOnce(t *testing.T, prior string, crashAt int, drop map[int]bool) (done bool) {
	ran := false
	t.Run(fmt.Sprintf("%s/crash@%d/drop%v", prior, crashAt, drop), func(t *testing.T) {
		ran = true
		base := memfs.New(nil)
		switch prior {
		case "old+older":
			put(t, base, "c.bak", []byte("older"))
			fallthrough
		case "old":
			put(t, base, "c", []byte("old"))
		}
		cfs := &crashFS{FS: base, crashAt: crashAt, drop: drop}
		err := backend.WriteFileAtomic(cfs, "c", []byte("new"))
		if err != nil && !errors.Is(err, errCrash) {
			t.Fatalf("WriteFileAtomic = %v", err)
		}
		done = err == nil || cfs.ops <= crashAt

		data, _, err := readFileWithBackup(memfs.New(base.Afero()), "c")
		switch {
		case err == nil && (string(data) == "new" || string(data) == "old" && prior != "none"):
		case errors.Is(err, backend.ErrNotExist) && prior == "none":
		default:
			t.Fatalf("after the crash: %q, %v", data, err)
		}
		if done && len(drop) == 0 && string(data) != "new" {
			t.Fatalf("completed write reads %q", data)
		}
	})
	return done || !ran
}

// readFileWithBackup reads a file written with WriteFileAtomic, as a
// reader that trusts name unless it is missing or empty would. If name is
// missing or empty, it reads name.bak instead and reports fromBackup. A
// missing name.bak then yields name's result: the empty content, or the
// error wrapping backend.ErrNotExist.
//
// A caller that finds the content of name corrupt should call ReadBackup.
func readFileWithBackup(fs backend.FS, name string) (data []byte, fromBackup bool, err error) {
	data, err = backend.ReadFile(fs, name)
	if err == nil && len(data) > 0 {
		return data, false, nil
	}
	if err != nil && !errors.Is(err, backend.ErrNotExist) {
		return nil, false, err
	}
	bak, berr := backend.ReadBackup(fs, name)
	if berr == nil {
		return bak, true, nil
	}
	if !errors.Is(berr, backend.ErrNotExist) {
		return nil, false, berr
	}
	return data, false, err
}
