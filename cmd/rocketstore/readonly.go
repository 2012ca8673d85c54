package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/backend/snapshot"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// openReadOnly opens the store in dir for inspection: the files are mapped
// read-only and whatever recovery must change (a torn tail, missing
// ConsumeQueues) is changed in memory only. It refuses, with a clear error,
// a store that a running process holds.
func openReadOnly(dir string, log io.Writer) (*engine.Store, error) {
	s, _, err := openReadOnlyFS(dir, log)
	return s, err
}

// openReadOnlyFS is openReadOnly that also returns the overlay the store
// sits on, for reading the broker's config files through it.
func openReadOnlyFS(dir string, log io.Writer) (*engine.Store, backend.FS, error) {
	base, err := mmap.NewReadOnly(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	fs := snapshot.New(base)
	s, err := engine.Open(fs, hooks.Manual(engine.Config{
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}))
	if errors.Is(err, backend.ErrLocked) {
		return nil, nil, fmt.Errorf("store %s is in use by another process (its lock file is held); stop it first: %w", dir, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return s, fs, nil
}
