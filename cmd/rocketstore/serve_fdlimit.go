package main

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/server"
)

// Room kept for the store's own files when serverMaxConnections is left
// to its default: a quarter of the open-file limit, at least
// minStoreFiles (CommitLog, ConsumeQueue and index files, config files,
// listeners, the metrics and console endpoints). Connections get the rest,
// and never fewer than minDefaultConns.
const (
	minStoreFiles   = 512
	minDefaultConns = 64
)

// defaultMaxConns is serverMaxConnections' default for an open-file limit
// of limit descriptors: limit − max(limit/4, 512), at least 64. A flood of
// connections is then refused by the server (and logged once) before it
// takes the descriptors the store needs to open a file (20,000 connections
// once left new clients with "route info not found").
func defaultMaxConns(limit uint64) int {
	room := max(limit/4, minStoreFiles)
	if limit <= room+minDefaultConns {
		return minDefaultConns
	}
	return int(min(limit-room, 1<<30))
}

// raiseOpenFileLimit raises the soft RLIMIT_NOFILE to the hard limit, as
// far as the system allows, and returns the soft limit in force.
func raiseOpenFileLimit() (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("getrlimit RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur >= lim.Max {
		return lim.Cur, nil
	}
	raised := lim
	raised.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
		return lim.Cur, fmt.Errorf("setrlimit RLIMIT_NOFILE %d -> %d: %w", lim.Cur, lim.Max, err)
	}
	return raised.Cur, nil
}

// applyOpenFileLimit raises the open-file limit and, unless the config set
// serverMaxConnections, bounds connections below it (defaultMaxConns).
func applyOpenFileLimit(nc *server.NodeConfig, log *slog.Logger) {
	limit, err := raiseOpenFileLimit()
	if err != nil {
		log.Warn("cannot raise the open-file limit; keeping it", "limit", limit, "err", err)
	}
	if limit == 0 {
		return
	}
	if nc.Server.Remoting.MaxConns == 0 {
		nc.Server.Remoting.MaxConns = defaultMaxConns(limit)
	}
	log.Info("open files", "limit", limit, "serverMaxConnections", nc.Server.Remoting.MaxConns)
}
