//go:build !brokenvariants

package proptest

import "fmt"

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// allVariants is the runnable set until the engine has the Unsafe hook.
func allVariants() []variant { return runnableVariants }
