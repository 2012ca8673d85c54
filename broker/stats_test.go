package broker_test

import (
	"sync"
	"testing"

	"github.com/rocketstore/rocketstore/broker"
)

// TestStatsCounts: the counters add what the paths report, by topic and
// by topic and group, under concurrent use; forgetting a deleted topic
// drops its counters (and its groups', not another topic's whose name it
// prefixes) but keeps the broker totals.
func TestStatsCounts(t *testing.T) {
	var s broker.Stats
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				s.Put("T", 2)
				s.Got("T", "G", 1)
				s.Got("TX", "G", 1)
			}
		}()
	}
	wg.Wait()
	s.Put("T", 0)
	s.Got("T", "G", -1)
	if put, got := s.Totals(); put != 1600 || got != 1600 {
		t.Fatalf("totals put %d got %d, want 1600 and 1600", put, got)
	}
	if n := s.TopicPuts()["T"]; n != 1600 {
		t.Fatalf("T put %d", n)
	}
	if gg := s.GroupGets(); gg["T@G"] != 800 || gg["TX@G"] != 800 {
		t.Fatalf("group gets %v", gg)
	}
	s.Forget("T")
	if _, ok := s.TopicPuts()["T"]; ok {
		t.Fatal("T's put counter survived its deletion")
	}
	if gg := s.GroupGets(); len(gg) != 1 || gg["TX@G"] != 800 {
		t.Fatalf("after forgetting T: %v", gg)
	}
	if put, got := s.Totals(); put != 1600 || got != 1600 {
		t.Fatalf("totals after forgetting T: %d %d", put, got)
	}
}
