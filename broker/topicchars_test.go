package broker

import (
	"regexp"
	"testing"

	"pgregory.net/rapid"
)

// validTopic accepts exactly what TopicValidator's regexp accepts.
func TestValidTopicMatchesRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.SampledFrom([]rune("aZ09_-%|. \x00é/:"))).Draw(t, "topic")
		if got, want := validTopic.MatchString(s), re.MatchString(s); got != want {
			t.Fatalf("validTopic(%q) = %v, regexp %v", s, got, want)
		}
	})
}
