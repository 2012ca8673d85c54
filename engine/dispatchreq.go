package engine

import "github.com/rocketstore/rocketstore/dispatch"

// dispatchRequest names dispatch.Request where a parameter shadows the
// package (scanCommitLog's dispatch flag).
type dispatchRequest = dispatch.Request
