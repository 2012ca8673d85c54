//go:build race

package transaction

// raceEnabled lowers the number of property-test cases under the race
// detector, which makes each case about 20 times slower.
const raceEnabled = true
