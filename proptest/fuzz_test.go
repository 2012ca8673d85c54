package proptest

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/engine/record"
)

const fixtures = "/work/shared/testdata/rocketmq-4x/"

// addFixture seeds f with a RocketMQ-written file, when it is present.
func addFixture(f *testing.F, name string, limit int) {
	b, err := os.ReadFile(fixtures + name)
	if err != nil {
		return
	}
	f.Add(b[:min(len(b), limit)])
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
	s, err := engine.Open(memfs.New(afs), engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16,
		Manual: true, Logger: quiet})
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

// FuzzConfigJSON is a placeholder until the broker's JSON config reader
// exists: backend.ReadFileWithBackup of arbitrary bytes, then
// encoding/json into a map.
func FuzzConfigJSON(f *testing.F) {
	for _, n := range []string{"consumerOffset.json", "topics.json", "delayOffset.json", "subscriptionGroup.json"} {
		addFixture(f, "broker-config/config/"+n, 1<<20)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := memfs.New(nil)
		if err := backend.WriteFileAtomic(fs, "c.json", b); err != nil {
			t.Fatal(err)
		}
		data, _, err := backend.ReadFileWithBackup(fs, "c.json")
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		_ = json.Unmarshal(data, &v)
	})
}
