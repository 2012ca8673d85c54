package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketstore/rocketstore/broker/timer"
)

// timerCollector exports the timer service's pending messages,
// deliveries and lateness, read from its published state once per scrape
// (the service counts them in fixed arrays, never per message).
type timerCollector struct{ svc *timer.Service }

var (
	timerPendingDesc = prometheus.NewDesc("rocketstore_timer_messages_pending",
		"Timer messages stored and not yet delivered (nor recalled).", nil, nil)
	timerTopicPendingDesc = prometheus.NewDesc("rocketstore_timer_topic_messages_pending",
		"Pending timer messages, by real topic.", []string{"topic"}, nil)
	timerDeliveredDesc = prometheus.NewDesc("rocketstore_timer_messages_delivered_total",
		"Timer messages delivered into their real topic since the service started.", nil, nil)
	timerLatenessDesc = prometheus.NewDesc("rocketstore_timer_delivery_lateness_seconds",
		"Delivery time minus due time (the delivery time rounded up to timerPrecisionMs) of the delivered timer messages.", nil, nil)
)

func (c *timerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- timerPendingDesc
	ch <- timerTopicPendingDesc
	ch <- timerDeliveredDesc
	ch <- timerLatenessDesc
}

func (c *timerCollector) Collect(ch chan<- prometheus.Metric) {
	// The total is the sum of the topics' counts of the same read, so
	// that the two agree in every scrape.
	var total int64
	for topic, n := range c.svc.Pending() {
		total += n
		ch <- prometheus.MustNewConstMetric(timerTopicPendingDesc, prometheus.GaugeValue, float64(n), topic)
	}
	ch <- prometheus.MustNewConstMetric(timerPendingDesc, prometheus.GaugeValue, float64(total))
	l := c.svc.Stats().Lateness
	ch <- prometheus.MustNewConstMetric(timerDeliveredDesc, prometheus.CounterValue, float64(l.Count))
	buckets := make(map[float64]uint64, len(l.Buckets))
	var cum uint64
	for i, n := range l.Buckets {
		cum += uint64(n)
		buckets[float64(timer.LatenessBucketsMs[i])/1000] = cum
	}
	ch <- prometheus.MustNewConstHistogram(timerLatenessDesc, uint64(l.Count), float64(l.SumMs)/1000, buckets)
}
