//go:build !unix

package engine

import "github.com/rocketstore/rocketstore/backend"

// adviseNoReadAround is a no-op where there is no madvise(2).
func adviseNoReadAround(backend.Segment) {}

// adviseHugePages is a no-op where there is no madvise(2).
func adviseHugePages(backend.Segment, int64, int64) bool { return false }
