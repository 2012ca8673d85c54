// Package link carries the engine's internal operations to package
// engineops without an import cycle: the engine imports this leaf and
// registers its accessor at init; engineops imports the engine and reads
// it. Nothing else should use this package.
package link

import "net/netip"

// Origin is the store timestamp and store host that a replicated broker
// group's leader assigned to a message. Every replica writes these values
// instead of its own clock and address, so that the replicas' CommitLogs
// are byte-identical.
type Origin struct {
	// StoreTimestamp is the store time in milliseconds. The CommitLog
	// still never lets store times go backwards along the log.
	StoreTimestamp int64
	// StoreHost is the address written as the record's STOREHOST.
	StoreHost netip.AddrPort
}

// Ops returns the operations of an *engine.Store (the argument) as a value
// that implements engineops.Ops; the engine sets it at init.
var Ops func(store any) any

// Records sets cfg, an *engine.Config, to open the store for replicated
// records with commit as its commit point; the engine sets it at init.
var Records func(cfg any, commit int64)
