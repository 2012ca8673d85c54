package console

import "time"

// DriveSampler makes the statistics sampler of consoles created afterwards
// tick only when the test sends on the returned channel, and returns a
// function that restores the real clock. The sampler takes a sample when it
// starts and after each tick; since the channel is unbuffered, a send
// returns only once every sample before it is stored.
func DriveSampler() (tick chan<- time.Time, restore func()) {
	old := sampleTicks
	ch := make(chan time.Time)
	sampleTicks = func() (<-chan time.Time, func()) { return ch, func() {} }
	return ch, func() { sampleTicks = old }
}
