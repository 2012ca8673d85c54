//go:build brokenvariants

package proptest

import (
	"fmt"

	"github.com/rocketstore/rocketstore/engine"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// allVariants adds the variants that need the engine's test hook
// (engine.Config.Unsafe, see the report): build with -tags brokenvariants
// once it exists.
func allVariants() []variant {
	hook := func(f func(*engine.Unsafe)) func(*setup) {
		return func(s *setup) {
			s.cfgHook = func(c *engine.Config) { f(&c.Unsafe) }
		}
	}
	return append(runnableVariants,
		variant{"NoTailZeroing", hook(func(u *engine.Unsafe) { u.NoTailZeroing = true })},
		variant{"NoPhysicalOffsetCheck", hook(func(u *engine.Unsafe) { u.NoPhysicalOffsetCheck = true })},
		variant{"NoMaxPhysicOffsetCheck", hook(func(u *engine.Unsafe) { u.NoMaxPhysicOffsetCheck = true })},
	)
}
