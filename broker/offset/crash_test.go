package offset_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/crashsim"
)

// TestPersistSurvivesPowerCut: offsets persisted on a fresh store (no
// config/ directory yet) must survive a power cut that keeps nothing
// unsynced. A first save that created config/ without syncing the root
// would lose the directory, and every offset saved in it (offsets back to
// nothing).
func TestPersistSurvivesPowerCut(t *testing.T) {
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := offset.Load(fs, "", log)
	if err != nil {
		t.Fatal(err)
	}
	m.Commit("h", "g", "T", 0, 42)
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	rfs, err := crashsim.New(fs.Crash(crashsim.Oldest), crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := offset.Load(rfs, "", log)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Query("g", "T", 0); got != 42 {
		t.Fatalf("persisted offset after a power cut: %d, want 42", got)
	}
}
