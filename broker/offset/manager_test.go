package offset_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/broker/offset"
)

func load(t *testing.T, afs afero.Fs) (*offset.Manager, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	m, err := offset.Load(memfs.New(afs), "", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return m, &logs
}

func TestCommitQuery(t *testing.T) {
	m, logs := load(t, afero.NewMemMapFs())
	if got := m.Query("g", "T", 0); got != -1 {
		t.Fatalf("absent = %d", got)
	}
	m.Commit("h", "g", "T", 0, 10)
	m.Commit("h", "g", "T", 1, 3)
	m.Commit("h", "g2", "T", 0, 5)
	m.Commit("h", "g", "U", 0, 7)
	if m.Query("g", "T", 0) != 10 || m.Query("g", "T", 1) != 3 || m.Query("g2", "T", 0) != 5 || m.Query("g", "T", 2) != -1 {
		t.Fatal(m.Table())
	}
	if strings.Contains(logs.String(), "NOTIFYME") {
		t.Fatal("forward commit logged")
	}
	// Backwards: stored (RocketMQ's unconditional put) and logged.
	m.Commit("h", "g", "T", 0, 4)
	if m.Query("g", "T", 0) != 4 || !strings.Contains(logs.String(), "[NOTIFYME]update consumer offset less than store") {
		t.Fatalf("%d %s", m.Query("g", "T", 0), logs)
	}
	if all := m.QueryAll("g", "T"); len(all) != 2 || all[1] != 3 {
		t.Fatal(all)
	}
	// Table and QueryAll are copies.
	m.Table()["T@g"][0] = 99
	m.QueryAll("g", "T")[0] = 99
	if m.Query("g", "T", 0) != 4 {
		t.Fatal("a copy aliased the table")
	}
	removed := m.RemoveGroup("g")
	if len(removed) != 2 || m.Query("g", "T", 1) != -1 || m.Query("g", "U", 0) != -1 || m.Query("g2", "T", 0) != 5 {
		t.Fatalf("removed %v, table %v", removed, m.Table())
	}
	if len(m.RemoveGroup("nope")) != 0 {
		t.Fatal("removed something of an unknown group")
	}
}

func TestClamp(t *testing.T) {
	m, logs := load(t, afero.NewMemMapFs())
	m.Commit("h", "g", "T", 0, 10)
	m.Commit("h", "g", "T", 1, 2)
	m.Commit("h", "g", "U", 0, 0)
	max := map[string]int64{"T/0": 6, "T/1": 6, "U/0": 0}
	n := m.Clamp(func(topic string, q int32) int64 { return max[topic+"/"+string(rune('0'+q))] })
	if n != 1 || m.Query("g", "T", 0) != 6 || m.Query("g", "T", 1) != 2 || m.Query("g", "U", 0) != 0 {
		t.Fatalf("%d %v", n, m.Table())
	}
	if !strings.Contains(logs.String(), "clamped") {
		t.Fatal("clamp not logged")
	}
}

func TestPersistOnlyWhenChanged(t *testing.T) {
	afs := afero.NewMemMapFs()
	fs := memfs.New(afs)
	m, err := offset.Load(fs, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(offset.File); !errors.Is(err, backend.ErrNotExist) {
		t.Fatal("an unchanged table was written")
	}
	m.Commit("h", "g", "T", 0, 1)
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	fs.Remove(offset.File)
	fs.Remove(offset.File + backend.BackupSuffix)
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(offset.File); !errors.Is(err, backend.ErrNotExist) {
		t.Fatal("persisted again without a change")
	}
	for _, change := range []func(){
		func() { m.Commit("h", "g", "T", 0, 1) }, // same value: still a commit
		func() { m.RemoveGroup("g") },
	} {
		change()
		if err := m.Persist(); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Stat(offset.File); err != nil {
			t.Fatal("a change was not persisted")
		}
		fs.Remove(offset.File)
		fs.Remove(offset.File + backend.BackupSuffix)
	}
}

// A power cut within the persist interval loses only what was committed
// since the last Persist; the file is RocketMQ's format.
func TestCrashWithinPersistInterval(t *testing.T) {
	afs := afero.NewMemMapFs()
	m, _ := load(t, afs)
	m.Commit("h", "g", "T", 0, 7)
	m.Commit("h", "g", "T", 3, 1)
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	m.Commit("h", "g", "T", 0, 9)
	m.Commit("h", "g", "U", 0, 1)
	// Abandon m; memfs.New on the same afero.Fs is the power cut.
	after, _ := load(t, afs)
	if after.Query("g", "T", 0) != 7 || after.Query("g", "T", 3) != 1 || after.Query("g", "U", 0) != -1 {
		t.Fatal(after.Table())
	}
	data, _ := backend.ReadFile(memfs.New(afs), offset.File)
	var f struct {
		OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	}
	if err := configfile.Decode(data, &f); err != nil || f.OffsetTable["T@g"][0] != 7 {
		t.Fatalf("%s %v", data, err)
	}
}

func TestBothFilesCorrupt(t *testing.T) {
	afs := afero.NewMemMapFs()
	afs.MkdirAll("config", 0o755)
	afero.WriteFile(afs, offset.File, []byte("{{"), 0o644)
	afero.WriteFile(afs, offset.File+".bak", []byte("}}"), 0o644)
	if _, err := offset.Load(memfs.New(afs), "", slog.New(slog.DiscardHandler)); !errors.Is(err, configfile.ErrCorrupt) {
		t.Fatal(err)
	}
	afero.WriteFile(afs, offset.File+".bak", []byte(`{"offsetTable":{"T@g":{0:3,1:4}}}`), 0o644)
	m, logs := load(t, afs)
	if m.Query("g", "T", 1) != 4 || !strings.Contains(logs.String(), "backup") {
		t.Fatalf("%v %s", m.Table(), logs)
	}
	// A null queue map in the file is dropped, not kept as a nil map
	// that a commit would write into.
	afero.WriteFile(afs, offset.File, []byte(`{"offsetTable":{"T@g":null}}`), 0o644)
	m, _ = load(t, afs)
	m.Commit("h", "g", "T", 0, 1)
	if m.Query("g", "T", 0) != 1 {
		t.Fatal(m.Table())
	}
}

func TestConcurrentCommitAndPersist(t *testing.T) {
	afs := afero.NewMemMapFs()
	m, _ := load(t, afs)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				m.Commit("h", "g", "T", int32(w), int64(i))
				if i%50 == 0 {
					if err := m.Persist(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	after, _ := load(t, afs)
	for w := range int32(4) {
		if after.Query("g", "T", w) != 199 {
			t.Fatal(after.Table())
		}
	}
}
