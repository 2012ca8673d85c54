package crashsim_test

import (
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/backendtest"
	"github.com/rocketstore/rocketstore/crashsim"
)

// TestContract runs the backend contract suite on crashsim, plain and with
// the harsher disk of the crash tests (freed blocks reused), so that the
// engine meets the same FS in the crash tests as in production.
func TestContract(t *testing.T) {
	for _, c := range []struct {
		name string
		opts crashsim.Options
	}{
		{"Default", crashsim.Options{}},
		{"ReuseFreedBlocks", crashsim.Options{ReuseFreedBlocks: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			backendtest.Run(t, func(t *testing.T) backend.FS { return newFS(t, c.opts) })
		})
	}
}
