package broker

import "errors"

// Sentinel errors.
var (
	// ErrClosed reports a call on a closed broker (or a held pull released
	// by Close).
	ErrClosed = errors.New("broker: closed")
	// ErrConfig reports an unusable configuration.
	ErrConfig = errors.New("broker: bad config")
)
