package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// TestForeignFilesInQueueDirectories: names the store never writes, left
// in the CommitLog's and a ConsumeQueue's directory, are skipped with a
// warning that names them; they are neither read as segments nor deleted.
// FUSE leaves .fuse_hidden<N> (a file unlinked while open, kept by a
// crash), NFS .nfs<N>; either may be empty or a second name of a segment.
func TestForeignFilesInQueueDirectories(t *testing.T) {
	const seg0 = "00000000000000000000"
	cqDir := "consumequeue/T/0/"
	for _, tc := range []struct {
		name, dir, file string
		copyOf          string // "" leaves the file empty
	}{
		{"fuse hidden, empty, in a consume queue", cqDir, ".fuse_hidden0000000a00000001", ""},
		{"fuse hidden, a segment's second name", cqDir, ".fuse_hidden0000000b00000002", cqDir + seg0},
		{"nfs silly rename in the commitlog", "commitlog/", ".nfs000000000012345600000001", "commitlog/" + seg0},
		{"a backup copy of a segment", "commitlog/", seg0 + ".bak", "commitlog/" + seg0},
		{"a 20-character name that is no offset", cqDir, "0000000000000000000x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			afs := afero.NewMemMapFs()
			var logged bytes.Buffer
			cfg := hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10,
				Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			s, err := engine.Open(memfs.New(afs), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", Body: fmt.Appendf(nil, "m%d", i)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := engineops.Of(s).Dispatch(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			var content []byte
			if tc.copyOf != "" {
				if content, err = afero.ReadFile(afs, tc.copyOf); err != nil {
					t.Fatal(err)
				}
			}
			stray := tc.dir + tc.file
			if err := afero.WriteFile(afs, stray, content, 0o644); err != nil {
				t.Fatal(err)
			}

			s, err = engine.Open(memfs.New(afs), cfg)
			if err != nil {
				t.Fatalf("open with %s in the store: %v", stray, err)
			}
			defer s.Close()
			if lo, hi := s.MinOffsetInQueue("T", 0), s.MaxOffsetInQueue("T", 0); lo != 0 || hi != 3 {
				t.Fatalf("T/0 offsets [%d, %d), want [0, 3)", lo, hi)
			}
			res, err := s.GetMessage("T", 0, 0, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Messages); n != 3 {
				t.Fatalf("read %d messages, want 3", n)
			}
			res.Release()
			if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), stray) {
				t.Fatalf("no warning naming %s; log:\n%s", stray, logged.String())
			}
			if ok, _ := afero.Exists(afs, stray); !ok {
				t.Fatalf("%s was deleted: it is not the store's", stray)
			}
		})
	}
}

// TestEmptyLoneQueueFileAfterPowerCut: a new segment whose preallocation a
// power cut took back (the name survived, the size did not: a file system
// that does not journal the size with the name, or LazyFS) is an empty
// file. With the default sizes nothing else says how long it should be:
// it counts as a file of the configured size, padded at open, and the
// store recovers the rest from the CommitLog.
func TestEmptyLoneQueueFileAfterPowerCut(t *testing.T) {
	afs := afero.NewMemMapFs()
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10})
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", Body: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	engineops.Of(s).Abandon() // a crash: the queue was never flushed
	seg := "consumequeue/T/0/00000000000000000000"
	if err := afero.WriteFile(afs, seg, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	s, err = engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatalf("open with an empty %s: %v", seg, err)
	}
	defer s.Close()
	if hi := s.MaxOffsetInQueue("T", 0); hi != 3 {
		t.Fatalf("T/0 max offset %d after recovery, want 3", hi)
	}
	if size, _ := afero.ReadFile(afs, seg); int64(len(size)) != engine.DefaultConsumeQueueUnits*engine.CQUnitSize {
		t.Fatalf("%s is %d bytes after open, want the default %d", seg, len(size), engine.DefaultConsumeQueueUnits*engine.CQUnitSize)
	}
}
