package filter_test

import (
	"fmt"

	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/record"
)

func Example() {
	f, err := filter.NewTagFilter("TagA || TagB")
	if err != nil {
		panic(err)
	}
	// getMessage checks the ConsumeQueue unit's tagsCode first...
	fmt.Println(f.IsMatchedByConsumeQueue(record.TagsCode("TagB")))
	fmt.Println(f.IsMatchedByConsumeQueue(record.TagsCode("TagC")))
	// ...then the record; hash-only filters accept whatever the hash let through.
	fmt.Println(f.IsMatchedByCommitLog(map[string]string{"TAGS": "TagB"}))

	_, err = filter.NewTagFilter("||")
	fmt.Println(err)
	// Output:
	// true
	// false
	// true
	// filter: bad subscription expression: "||" names no tag
}

// "Aa" and "BB" have the same Java hash code, so only the exact filter can
// tell them apart, and only once the record's properties are read.
func ExampleNewSubscriptionFilter() {
	hash, _ := filter.NewTagFilter("Aa")
	sd, _ := filter.BuildSubscriptionData("TopicTest", "Aa")
	exact, _ := filter.NewSubscriptionFilter(sd, filter.MatchExact)
	bb := map[string]string{"TAGS": "BB"}
	fmt.Println(hash.IsMatchedByConsumeQueue(record.TagsCode("BB")), hash.IsMatchedByCommitLog(bb))
	fmt.Println(exact.IsMatchedByConsumeQueue(record.TagsCode("BB")), exact.IsMatchedByCommitLog(bb))
	fmt.Println(exact.MatchTag("Aa"), exact.MatchTag("BB"))
	// Output:
	// true true
	// true false
	// true false
}

func ExampleBuildSubscriptionData() {
	sd, err := filter.BuildSubscriptionData("TopicTest", " Aa || BB ||Aa|| ")
	if err != nil {
		panic(err)
	}
	fmt.Println(sd.TagsSet, sd.CodeSet, sd.ExpressionType)
	// Output:
	// [Aa BB] [2112] TAG
}
