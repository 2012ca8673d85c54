package filter

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/rocketstore/rocketstore/record"
)

// newExactTagFilter is NewTagFilter in mode MatchExact.
func newExactTagFilter(expr string) (*TagFilter, error) { return newFromExpr(expr, MatchExact) }

func mustFilter(t testing.TB, build func(string) (*TagFilter, error), expr string) *TagFilter {
	t.Helper()
	f, err := build(expr)
	if err != nil {
		t.Fatalf("build %q: %v", expr, err)
	}
	return f
}

func TestConsumeQueueMatch(t *testing.T) {
	var zero TagFilter
	tests := []struct {
		name     string
		f        record.MessageFilter
		tagsCode int64
		want     bool
	}{
		{"all/any", All, 12345, true},
		{"zero value is SubAll", &zero, -7, true},
		{"star", mustFilter(t, NewTagFilter, "*"), 987, true},
		{"empty expr", mustFilter(t, NewTagFilter, ""), 0, true},
		{"hit", mustFilter(t, NewTagFilter, "TagA||TagB"), record.TagsCode("TagB"), true},
		{"miss", mustFilter(t, NewTagFilter, "TagA||TagB"), record.TagsCode("TagC"), false},
		{"untagged message", mustFilter(t, NewTagFilter, "TagA"), record.TagsCode(""), false},
		{"collision passes the CQ", mustFilter(t, newExactTagFilter, "Aa"), record.TagsCode("BB"), true},
		// Negative hash codes are stored sign-extended.
		{"negative sign-extended", mustFilter(t, NewTagFilter, "order-created"), -392709271, true},
		{"min int32", mustFilter(t, NewTagFilter, "polygenelubricants"), math.MinInt32, true},
		// Java compares tagsCode.intValue(), dropping the high 32 bits, so a
		// zero-extended code matches too.
		{"negative zero-extended", mustFilter(t, NewTagFilter, "order-created"), int64(uint32(javaHash("order-created"))), true},
		{"high bits ignored", mustFilter(t, NewTagFilter, "TagA"), 1<<40 | 2598919, true},
		{"negative miss", mustFilter(t, NewTagFilter, "order-created"), 392709271, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.IsMatchedByConsumeQueue(tt.tagsCode); got != tt.want {
				t.Errorf("IsMatchedByConsumeQueue(%d) = %v, want %v", tt.tagsCode, got, tt.want)
			}
		})
	}
}

func TestLargeCodeSet(t *testing.T) {
	sd := &SubscriptionData{SubString: "many", ExpressionType: ExpressionTypeTag}
	for i := range 3 * smallSet {
		sd.addTag(fmt.Sprintf("Tag%d", i))
	}
	f, err := NewSubscriptionFilter(sd, MatchExact)
	if err != nil {
		t.Fatal(err)
	}
	if f.codeMap == nil {
		t.Fatal("large set not stored in a map")
	}
	for i := range 3 * smallSet {
		tag := fmt.Sprintf("Tag%d", i)
		if !f.MatchTag(tag) {
			t.Errorf("MatchTag(%q) = false", tag)
		}
	}
	if f.MatchTag("Other") || f.IsMatchedByConsumeQueue(record.TagsCode("Other")) {
		t.Error("unsubscribed tag matched")
	}
}

// "Aa" and "BB" share the Java hash code 2112: the hash filter delivers
// both, the exact filter only the subscribed one.
func TestCollision(t *testing.T) {
	hash := mustFilter(t, NewTagFilter, "Aa")
	exact := mustFilter(t, newExactTagFilter, "Aa")
	tests := []struct {
		name  string
		f     *TagFilter
		props map[string]string
		want  bool
	}{
		{"hash/subscribed", hash, map[string]string{"TAGS": "Aa"}, true},
		{"hash/collision", hash, map[string]string{"TAGS": "BB"}, true},
		{"hash/nil props", hash, nil, true},
		{"exact/subscribed", exact, map[string]string{"TAGS": "Aa", "KEYS": "k"}, true},
		{"exact/collision", exact, map[string]string{"TAGS": "BB"}, false},
		{"exact/no TAGS", exact, map[string]string{"KEYS": "k"}, false},
		{"exact/empty props", exact, map[string]string{}, false},
		{"exact/nil props falls back to hash", exact, nil, true},
		{"exact star", mustFilter(t, newExactTagFilter, "*"), map[string]string{"TAGS": "BB"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.f.IsMatchedByConsumeQueue(2112) {
				t.Fatal("IsMatchedByConsumeQueue(2112) = false")
			}
			if got := tt.f.IsMatchedByCommitLog(tt.props); got != tt.want {
				t.Errorf("IsMatchedByCommitLog(%v) = %v, want %v", tt.props, got, tt.want)
			}
		})
	}
}

func TestMatchTag(t *testing.T) {
	hash := mustFilter(t, NewTagFilter, "Aa || TagA")
	exact := mustFilter(t, newExactTagFilter, "Aa || TagA")
	all := mustFilter(t, newExactTagFilter, "*")
	tests := []struct {
		tags                string
		wantHash, wantExact bool
	}{
		{"Aa", true, true},
		{"TagA", true, true},
		{"BB", true, false},
		{"TagB", false, false},
		{"", false, false},
		{"aa", false, false},
	}
	for _, tt := range tests {
		if got := hash.MatchTag(tt.tags); got != tt.wantHash {
			t.Errorf("hash.MatchTag(%q) = %v, want %v", tt.tags, got, tt.wantHash)
		}
		if got := exact.MatchTag(tt.tags); got != tt.wantExact {
			t.Errorf("exact.MatchTag(%q) = %v, want %v", tt.tags, got, tt.wantExact)
		}
		if !all.MatchTag(tt.tags) {
			t.Errorf("all.MatchTag(%q) = false", tt.tags)
		}
	}
}

func TestNewSubscriptionFilterErrors(t *testing.T) {
	tests := []struct {
		name string
		sd   *SubscriptionData
		mode Mode
		want error
	}{
		{"nil", nil, MatchHash, ErrBadExpression},
		{"sql92", &SubscriptionData{SubString: "a > 1", ExpressionType: ExpressionTypeSQL92}, MatchHash, ErrUnsupportedType},
		{"no codes", &SubscriptionData{SubString: "  "}, MatchHash, ErrBadExpression},
		{"exact without tags", &SubscriptionData{SubString: "A", CodeSet: []int32{65}}, MatchExact, ErrBadExpression},
		{"bad mode", &SubscriptionData{SubString: SubAll}, Mode(9), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewSubscriptionFilter(tt.sd, tt.mode)
			if err == nil || f != nil {
				t.Fatalf("got (%v, %v), want an error", f, err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestFilterCopiesSubscription(t *testing.T) {
	sd, err := BuildSubscriptionData("T", "TagA")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewSubscriptionFilter(sd, MatchExact)
	if err != nil {
		t.Fatal(err)
	}
	sd.CodeSet[0] = javaHash("TagB")
	sd.TagsSet[0] = "TagB"
	if !f.MatchTag("TagA") || f.MatchTag("TagB") {
		t.Error("filter changed with its SubscriptionData")
	}
}

func TestAccessors(t *testing.T) {
	f := mustFilter(t, newExactTagFilter, "A||B")
	if f.Mode() != MatchExact || f.MatchesAll() {
		t.Errorf("Mode, MatchesAll = %v, %v", f.Mode(), f.MatchesAll())
	}
	if got, want := f.String(), `tag("A||B", exact)`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	var zero TagFilter
	if !zero.MatchesAll() || zero.String() != `tag("*", hash)` {
		t.Errorf("zero: MatchesAll %v, String %s", zero.MatchesAll(), zero.String())
	}
	if Mode(7).String() != "Mode(7)" {
		t.Errorf("Mode(7).String() = %s", Mode(7))
	}
}

func TestConcurrentUse(t *testing.T) {
	f := mustFilter(t, newExactTagFilter, "TagA||TagB")
	props := map[string]string{"TAGS": "TagB"}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if !f.IsMatchedByConsumeQueue(2598920) || !f.IsMatchedByCommitLog(props) || f.MatchTag("TagC") {
					t.Error("wrong match under concurrency")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestMatchDoesNotAllocate(t *testing.T) {
	small := mustFilter(t, newExactTagFilter, "TagA||TagB||order-created")
	sd := &SubscriptionData{SubString: "many"}
	for i := range 4 * smallSet {
		sd.addTag(fmt.Sprintf("Tag%d", i))
	}
	large, err := NewSubscriptionFilter(sd, MatchExact)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"TAGS": "TagB"}
	for _, f := range []*TagFilter{small, large} {
		if n := testing.AllocsPerRun(100, func() {
			f.IsMatchedByConsumeQueue(-392709271)
			f.IsMatchedByConsumeQueue(1)
			f.IsMatchedByCommitLog(props)
			f.MatchTag("TagB")
		}); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", f, n)
		}
	}
}

var sink bool

func BenchmarkIsMatchedByConsumeQueue(b *testing.B) {
	for _, n := range []int{1, 4, smallSet, 4 * smallSet} {
		sd := &SubscriptionData{SubString: "bench"}
		for i := range n {
			sd.addTag(fmt.Sprintf("Tag%d", i))
		}
		f, err := NewSubscriptionFilter(sd, MatchHash)
		if err != nil {
			b.Fatal(err)
		}
		miss := record.TagsCode("NoSuchTag")
		b.Run(fmt.Sprintf("tags=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = f.IsMatchedByConsumeQueue(miss)
			}
		})
	}
}

func BenchmarkIsMatchedByCommitLogExact(b *testing.B) {
	f := mustFilter(b, newExactTagFilter, "TagA||TagB")
	props := map[string]string{"TAGS": "TagB", "KEYS": "k1"}
	b.ReportAllocs()
	for b.Loop() {
		sink = f.IsMatchedByCommitLog(props)
	}
}
