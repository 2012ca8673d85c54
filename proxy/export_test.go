package proxy

// OnStreamCounted makes f run each time a receive or pull stream is
// counted in flight by proxies, and returns a function that removes it.
// Set it before the proxy serves and restore it after it stopped.
func OnStreamCounted(f func()) (restore func()) {
	streamCounted = f
	return func() { streamCounted = nil }
}
