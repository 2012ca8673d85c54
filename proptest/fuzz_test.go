package proptest

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/engine/record"
	"github.com/rocketstore/rocketstore/internal/fixture"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// addFixture seeds f with a RocketMQ-written file from the shared
// fixtures (see internal/fixture). The committed corpus under testdata/fuzz
// holds the same seeds, so a missing file only loses a duplicate.
func addFixture(f *testing.F, name string, limit int) {
	p, err := fixture.Find(name)
	if err != nil {
		return
	}
	if b, err := os.ReadFile(p); err == nil {
		f.Add(b[:min(len(b), limit)])
	}
}

// FuzzRecordCheck: the CommitLog record decoder never panics or reads out
// of bounds, and a record it accepts re-checks the same way.
func FuzzRecordCheck(f *testing.F) {
	addFixture(f, "store-2021-8k/commitlog/00000000000000000000", 8192)
	addFixture(f, "store-2019-unit/commitlog/00000000000000000000", 200)
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := record.Check(b, -1, true)
		if err != nil || info.Blank {
			return
		}
		if int(info.Size) > len(b) {
			t.Fatalf("accepted a record of %d bytes from %d", info.Size, len(b))
		}
		if _, err := record.Decode(b[:info.Size], info.PhysicalOffset, true); err != nil {
			t.Fatalf("Check accepted, Decode refused: %v", err)
		}
	})
}

// FuzzDecodeUnit: the ConsumeQueue unit reader round-trips any 20 bytes.
func FuzzDecodeUnit(f *testing.F) {
	f.Add(make([]byte, engine.CQUnitSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < engine.CQUnitSize {
			return
		}
		u := engine.DecodeUnit(b)
		_ = u
	})
}

// openFuzzStore opens a 4096-byte-file store whose file name holds data,
// and must neither panic nor hang; errors are fine.
func openFuzzStore(t *testing.T, name string, data []byte) {
	afs := afero.NewMemMapFs()
	if err := afs.MkdirAll(pathDir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := afero.WriteFile(afs, name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(memfs.New(afs), hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16, Logger: quiet}))
	if err != nil {
		return
	}
	for topic, ids := range s.Topics() {
		for _, id := range ids {
			if r, err := s.GetMessage("g", topic, id, 0, 32, nil); err == nil {
				r.Release()
			}
		}
	}
	_ = s.Close()
}

func pathDir(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return "."
}

// FuzzRecoverCommitLog: recovery of an arbitrary first CommitLog file.
func FuzzRecoverCommitLog(f *testing.F) {
	addFixture(f, "store-2021-8k/commitlog/00000000000000000000", 4096)
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		img := make([]byte, 4096) // the store's file size; other sizes are refused
		copy(img, b)
		openFuzzStore(t, "commitlog/00000000000000000000", img)
	})
}

// FuzzRecoverConsumeQueue: a store whose only file is a ConsumeQueue file
// holding arbitrary units.
func FuzzRecoverConsumeQueue(f *testing.F) {
	f.Add(make([]byte, 16*engine.CQUnitSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		img := make([]byte, 16*engine.CQUnitSize)
		copy(img, b)
		openFuzzStore(t, "consumequeue/T/0/00000000000000000000", img)
	})
}

// FuzzConfigJSON: the broker's readers of RocketMQ's JSON config files
// (fastjson output with bare integer keys, .bak fallback) never panic on
// any content, and what they accept they write back as standard JSON that
// loads again to the same table.
func FuzzConfigJSON(f *testing.F) {
	for _, n := range []string{"consumerOffset.json", "topics.json", "delayOffset.json", "subscriptionGroup.json", "consumerFilter.json"} {
		addFixture(f, "broker-config/config/"+n, 1<<20)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v map[string]any
		if configfile.Decode(b, &v) == nil && !json.Valid(configfile.QuoteBareKeys(b)) {
			t.Fatal("Decode accepted bytes that do not quote to valid JSON")
		}
		fuzzOffsets(t, b)
		for _, name := range []string{config.TopicsFile, config.GroupsFile} {
			fs := memfs.New(nil)
			writeConfig(t, fs, name, b)
			switch name {
			case config.TopicsFile:
				_, _ = config.LoadTopics(fs, config.TopicOptions{})
			default:
				_, _ = config.LoadGroups(fs, true, func() int64 { return 0 })
			}
		}
	})
}

// fuzzOffsets loads b as consumerOffset.json; an accepted table must
// survive a persist and reload unchanged.
func fuzzOffsets(t *testing.T, b []byte) {
	fs := memfs.New(nil)
	writeConfig(t, fs, offset.File, b)
	m, err := offset.Load(fs, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return
	}
	want := m.Table()
	m.Commit("fuzz", "fuzz-group", "fuzz-topic", 0, 1) // Persist writes only a changed table
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	again, err := offset.Load(fs, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("a persisted offset table does not load: %v", err)
	}
	got := again.Table()
	for k, qs := range want {
		for q, off := range qs {
			if got[k][q] != off {
				t.Fatalf("offset %s/%d: %d after a round trip, want %d", k, q, got[k][q], off)
			}
		}
	}
}

func writeConfig(t *testing.T, fs backend.FS, name string, b []byte) {
	t.Helper()
	if err := fs.MkdirAll(path.Dir(name)); err != nil {
		t.Fatal(err)
	}
	if err := backend.WriteFileAtomic(fs, name, b); err != nil {
		t.Fatal(err)
	}
}
