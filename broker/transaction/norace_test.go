//go:build !race

package transaction

const raceEnabled = false
