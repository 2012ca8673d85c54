package console

import "time"

// SetSampleEvery sets the statistics sampling period for consoles
// created afterwards and returns a function that restores it.
func SetSampleEvery(d time.Duration) (restore func()) {
	old := sampleEvery
	sampleEvery = d
	return func() { sampleEvery = old }
}
