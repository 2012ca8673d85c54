package adminapi

import (
	"fmt"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/admin"
)

// Statistics for GET_BROKER_RUNTIME_INFO (28), VIEW_BROKER_STATS_DATA
// (315) and the console. The counts are the broker's counters
// (broker.Stats: messages stored by sends, messages delivered by pulls and
// pop receives), sampled once a second; a rate is the difference of two
// samples over their distance in time. At each local midnight the totals
// are recorded as the day's morning values, as RocketMQ's BrokerStats
// records them (msgPutTotalTodayMorning, ...): before the first midnight
// they are 0, so "today" is since the broker started.

// Stats names of VIEW_BROKER_STATS_DATA (BrokerStatsManager's).
const (
	statsTopicPutNums  = "TOPIC_PUT_NUMS"  // key: topic
	statsGroupGetNums  = "GROUP_GET_NUMS"  // key: topic@group
	statsBrokerPutNums = "BROKER_PUT_NUMS" // key: cluster name
	statsBrokerGetNums = "BROKER_GET_NUMS" // key: cluster name
)

type sample struct {
	at    int64 // unix ms
	value int64 // cumulative count
}

// series is one counter's history: a sample a second for ten minutes and
// a sample a minute for a day.
type series struct {
	secs, mins []sample
}

const (
	secSamples = 601
	minSamples = 1441
)

func (s *series) add(at, v int64) {
	s.secs = appendRing(s.secs, sample{at, v}, secSamples)
	if n := len(s.mins); n == 0 || at-s.mins[n-1].at >= 60_000 {
		s.mins = appendRing(s.mins, sample{at, v}, minSamples)
	}
}

func appendRing(r []sample, x sample, max int) []sample {
	if len(r) == max {
		copy(r, r[1:])
		r = r[:max-1]
	}
	return append(r, x)
}

// window returns the count added in the last d and the rate per second,
// measured between the newest sample and the oldest one within d.
func (s *series) window(d time.Duration) (sum int64, tps float64) {
	if len(s.secs) == 0 {
		return 0, 0
	}
	last := s.secs[len(s.secs)-1]
	from := last.at - d.Milliseconds()
	ring := s.secs
	if len(s.secs) > 0 && s.secs[0].at > from && len(s.mins) > 0 && s.mins[0].at < s.secs[0].at {
		ring = s.mins
	}
	first := last
	for _, x := range ring {
		if x.at >= from {
			first = x
			break
		}
	}
	sum = last.value - first.value
	if span := last.at - first.at; span > 0 {
		tps = float64(sum) * 1000 / float64(span)
	}
	return sum, tps
}

// statsTable holds the series by "name@key".
type statsTable struct {
	mu     sync.Mutex
	series map[string]*series
	boot   time.Time

	// day is the local date of the last sample; the mornings are the
	// broker totals at the last two midnights.
	day                       string
	morning, yesterdayMorning dayTotals
}

// dayTotals are the broker's message totals at a moment.
type dayTotals struct{ put, got int64 }

// recordMorning rotates the mornings when the local date changed since
// the last sample (RocketMQ's BrokerStats.record, run at midnight).
func (t *statsTable) recordMorning(now time.Time, totals dayTotals) {
	day := now.Format(time.DateOnly)
	if t.day != "" && t.day != day {
		t.yesterdayMorning, t.morning = t.morning, totals
	}
	t.day = day
}

func newStatsTable(boot time.Time) *statsTable {
	return &statsTable{series: map[string]*series{}, boot: boot}
}

func (t *statsTable) get(name, key string) (*series, bool) {
	s, ok := t.series[name+"@"+key]
	return s, ok
}

// Sample records every counter once (the sampler's tick; tests call it to
// sample at a time of their clock).
func (a *API) Sample() {
	if a.b == nil { // name-server-only role: no store to sample
		return
	}
	now := a.cfg.Clock.Now()
	at := now.UnixMilli()
	counts := map[string]int64{}
	bs := a.b.Stats()
	for topic, n := range bs.TopicPuts() {
		counts[statsTopicPutNums+"@"+topic] = n
	}
	for k, n := range bs.GroupGets() {
		counts[statsGroupGetNums+"@"+k] = n
	}
	put, got := bs.Totals()
	counts[statsBrokerPutNums+"@"+a.cfg.ClusterName] = put
	counts[statsBrokerGetNums+"@"+a.cfg.ClusterName] = got
	t := a.stats
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recordMorning(now, dayTotals{put, got})
	for k, v := range counts {
		sr := t.series[k]
		if sr == nil {
			sr = &series{}
			t.series[k] = sr
		}
		sr.add(at, v)
	}
	for k := range t.series {
		if _, ok := counts[k]; !ok {
			delete(t.series, k) // a deleted topic or group
		}
	}
}

// statsLoop samples once a second until the server stops (silent
// producers expire with the other clients, in housekeeping).
func (a *API) statsLoop() {
	defer close(a.statsDone)
	a.Sample()
	t := a.cfg.Clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.Chan():
			a.Sample()
		}
	}
}

// brokerStatsData answers VIEW_BROKER_STATS_DATA for one series.
func (a *API) brokerStatsData(name, key string) (admin.BrokerStatsData, bool) {
	t := a.stats
	t.mu.Lock()
	defer t.mu.Unlock()
	sr, ok := t.get(name, key)
	if !ok {
		return admin.BrokerStatsData{}, false
	}
	item := func(d time.Duration) admin.BrokerStatsItem {
		sum, tps := sr.window(d)
		return admin.BrokerStatsItem{Sum: sum, Tps: tps}
	}
	return admin.BrokerStatsData{StatsMinute: item(time.Minute), StatsHour: item(time.Hour), StatsDay: item(24 * time.Hour)}, true
}

// rates returns the put and get rates over d (messages per second) and
// the totals of the last sample.
func (a *API) rates(d time.Duration) (putTps, getTps float64, putTotal, getTotal int64) {
	t := a.stats
	t.mu.Lock()
	defer t.mu.Unlock()
	if sr, ok := t.get(statsBrokerPutNums, a.cfg.ClusterName); ok {
		_, putTps = sr.window(d)
		putTotal = sr.secs[len(sr.secs)-1].value
	}
	if sr, ok := t.get(statsBrokerGetNums, a.cfg.ClusterName); ok {
		_, getTps = sr.window(d)
		getTotal = sr.secs[len(sr.secs)-1].value
	}
	return
}

// tpsTriple formats the 10 s, 1 min and 10 min rates as RocketMQ's
// runtime info does ("putTps": "12.00 10.50 9.75").
func tpsTriple(f func(time.Duration) float64) string {
	return fmt.Sprintf("%.2f %.2f %.2f", f(10*time.Second), f(time.Minute), f(10*time.Minute))
}

// runtimeDesc formats an uptime as RocketMQ does.
func runtimeDesc(d time.Duration) string {
	ms := d.Milliseconds()
	day := ms / 86_400_000
	hour := ms / 3_600_000 % 24
	min := ms / 60_000 % 60
	sec := ms / 1000 % 60
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", day, hour, min, sec)
}

// mornings returns the broker totals recorded at the last two midnights
// (0 before the broker saw one).
func (a *API) mornings() (today, yesterday dayTotals) {
	a.stats.mu.Lock()
	defer a.stats.mu.Unlock()
	return a.stats.morning, a.stats.yesterdayMorning
}
