package filter

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/record"
)

// javaHash is Java's String.hashCode for ASCII text only, written out from the
// formula s[0]*31^(n-1) + ... + s[n-1] mod 2^32 so that tests do not trust
// the implementation under test.
func javaHash(s string) int32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h = 31*h + uint32(s[i])
	}
	return int32(h)
}

func TestJavaHashCodes(t *testing.T) {
	// Values Java prints for "...".hashCode().
	known := []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"*", 42},
		{"abc", 96354},
		{"Aa", 2112},
		{"BB", 2112},
		{"AaBB", 2031744},
		{"BBAa", 2031744},
		{"TagA", 2598919},
		{"TagB", 2598920},
		{"hello world", 1794106052},
		{"order-created", -392709271},
		{"polygenelubricants", -2147483648},
	}
	for _, k := range known {
		if got := javaHash(k.s); got != k.want {
			t.Errorf("formula(%q) = %d, want %d", k.s, got, k.want)
		}
		if got := record.JavaStringHashCode(k.s); got != k.want {
			t.Errorf("JavaStringHashCode(%q) = %d, want %d", k.s, got, k.want)
		}
	}
}

func TestBuildSubscriptionData(t *testing.T) {
	tests := []struct {
		expr    string
		wantSub string   // SubString after parsing
		tags    []string // nil for SubAll
		codes   []int32  // nil: the formula over tags
		wantErr bool
	}{
		{expr: "*", wantSub: SubAll},
		{expr: "", wantSub: SubAll},
		{expr: "A", tags: []string{"A"}},
		{expr: "A || B", tags: []string{"A", "B"}},
		{expr: " A||B ", tags: []string{"A", "B"}},
		{expr: "A||", tags: []string{"A"}},
		{expr: "||A", tags: []string{"A"}},
		{expr: "A|| ||B", tags: []string{"A", "B"}},
		{expr: "A||A|| A ||B||A", tags: []string{"A", "B"}},
		// Distinct tags, one code: the collision exact mode exists for.
		{expr: "Aa||BB", tags: []string{"Aa", "BB"}, codes: []int32{2112}},
		// Only exactly "*" is SubAll, as in RocketMQ.
		{expr: " * ", tags: []string{"*"}, codes: []int32{42}},
		{expr: "A||*", tags: []string{"A", "*"}},
		// Kept as RocketMQ keeps them.
		{expr: "A B", tags: []string{"A B"}},
		{expr: "A|B", tags: []string{"A|B"}},
		{expr: "A|||B", tags: []string{"A", "|B"}},
		// Java's trim removes control characters but not U+00A0.
		{expr: "\tA\r\n||\x00B\x1f", tags: []string{"A", "B"}},
		{expr: "\u00a0A", tags: []string{"\u00a0A"}, codes: []int32{0xA0*31 + 'A'}},
		{expr: "order-created", tags: []string{"order-created"}, codes: []int32{-392709271}},
		// No tag at all.
		{expr: "||", wantErr: true},
		{expr: "||||", wantErr: true},
		{expr: "   ", wantErr: true},
		{expr: " || ", wantErr: true},
		{expr: "|| \t ||", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			sd, err := BuildSubscriptionData("TopicTest", tt.expr)
			if tt.wantErr {
				if !errors.Is(err, ErrBadExpression) {
					t.Fatalf("err = %v, want ErrBadExpression", err)
				}
				if !strings.Contains(err.Error(), strconv.Quote(tt.expr)) {
					t.Errorf("error %q does not name the expression", err)
				}
				if sd != nil {
					t.Errorf("sd = %+v, want nil on error", sd)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			wantSub := tt.wantSub
			if wantSub == "" {
				wantSub = tt.expr // RocketMQ keeps the expression as given
			}
			if sd.Topic != "TopicTest" || sd.SubString != wantSub || sd.ExpressionType != ExpressionTypeTag {
				t.Errorf("sd = %+v, want topic TopicTest, SubString %q, type TAG", sd, wantSub)
			}
			if sd.SubVersion <= 0 {
				t.Errorf("SubVersion = %d, want a timestamp", sd.SubVersion)
			}
			if !slices.Equal(sd.TagsSet, tt.tags) {
				t.Errorf("TagsSet = %q, want %q", sd.TagsSet, tt.tags)
			}
			wantCodes := tt.codes
			if wantCodes == nil {
				for _, tag := range tt.tags {
					if c := javaHash(tag); !slices.Contains(wantCodes, c) {
						wantCodes = append(wantCodes, c)
					}
				}
			}
			if !slices.Equal(sd.CodeSet, wantCodes) {
				t.Errorf("CodeSet = %v, want %v", sd.CodeSet, wantCodes)
			}
		})
	}
}
