package dispatch

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/record"
)

// dispatchProperties finds the same TAGS, KEYS, UNIQ_KEY and DELAY values
// as a walk with record.ForEachProperty, on any property string (valid
// pairs, empty names or values, missing separators, duplicates).
func TestDispatchPropertiesMatchesForEachProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Items name\x01value joined by \x02, with the names dispatch
		// reads, others, empty ones, and stray separators.
		names := rapid.SampledFrom([]string{record.PropertyTags, record.PropertyKeys, record.PropertyUniqClientMsgID,
			record.PropertyDelayTimeLevel, "WAIT", "T", "", "\x01", "\x02"})
		values := rapid.SampledFrom([]string{"", "v", "TagA", "3", "\x01", "a\x01b"})
		seps := rapid.SampledFrom([]string{"\x01", "\x02", ""})
		var b []byte
		for i, n := 0, rapid.IntRange(0, 6).Draw(t, "items"); i < n; i++ {
			if i > 0 {
				b = append(b, seps.Draw(t, "between")...)
			}
			b = append(b, names.Draw(t, "name")...)
			b = append(b, seps.Draw(t, "sep")...)
			b = append(b, values.Draw(t, "value")...)
		}
		var want Request
		var wantTags, wantDelay []byte
		record.ForEachProperty(b, func(k, v []byte) bool {
			switch string(k) {
			case record.PropertyTags:
				wantTags = v
			case record.PropertyKeys:
				want.Keys = v
			case record.PropertyUniqClientMsgID:
				want.UniqKey = v
			case record.PropertyDelayTimeLevel:
				wantDelay = v
			}
			return true
		})
		var got Request
		tags, delay := dispatchProperties(&got, b)
		if !bytes.Equal(tags, wantTags) || !bytes.Equal(delay, wantDelay) ||
			!bytes.Equal(got.Keys, want.Keys) || !bytes.Equal(got.UniqKey, want.UniqKey) ||
			(tags == nil) != (wantTags == nil) || (delay == nil) != (wantDelay == nil) {
			t.Fatalf("properties %q: got tags %q delay %q keys %q uniq %q, want %q %q %q %q",
				b, tags, delay, got.Keys, got.UniqKey, wantTags, wantDelay, want.Keys, want.UniqKey)
		}
	})
}
