// Package backendtest is the contract test suite for backend.FS
// implementations.
//
// Each backend's tests call Run with a constructor for a fresh, empty FS; the
// suite checks every FS and Segment method against the contract written in
// package backend, so that the engine gets the same behaviour from mmap,
// memfs and crashsim alike:
//
//	func TestContract(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backend.FS {
//			fsys, err := mmap.New(t.TempDir())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return fsys
//		})
//	}
//
// The suite checks only what every backend promises. Durability is tested
// for synced data alone, since what survives without Sync is exactly where
// backends differ. The concurrency tests only mean something under
// go test -race.
package backendtest

import (
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// test is one contract check run against a fresh FS.
type test struct {
	name string
	fn   func(t *testing.T, fsys backend.FS)
}

// Run runs the contract suite. newFS must return a new, empty FS each time
// it is called; it may register cleanups on the t it is given.
func Run(t *testing.T, newFS func(t *testing.T) backend.FS) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Create", createTests},
		{"Open", openTests},
		{"Stat", statTests},
		{"Remove", removeTests},
		{"Rename", renameTests},
		{"List", listTests},
		{"ListDirs", listDirsTests},
		{"MkdirAll", mkdirAllTests},
		{"RemoveAll", removeAllTests},
		{"SyncDir", syncDirTests},
		{"Lock", lockTests},
		{"View", viewTests},
		{"WriteAt", writeAtTests},
		{"Pwrite", pwriteTests},
		{"Sync", syncTests},
		{"Close", closeTests},
		{"Concurrent", concurrentTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.fn(t, newFS(t))
				})
			}
		})
	}
}
