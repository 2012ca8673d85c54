//go:build !unix

package engine

import "github.com/rocketstore/rocketstore/backend"

// adviseNoReadAround is a no-op where there is no madvise(2).
func adviseNoReadAround(backend.Segment) {}
