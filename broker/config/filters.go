package config

// FiltersFile is where RocketMQ's ConsumerFilterManager keeps the SQL92
// filter data of consumer groups.
const FiltersFile = "config/consumerFilter.json"

// ConsumerFilterData is one group's filter for one topic (RocketMQ's
// ConsumerFilterData). broker's consumer filter manager (broker/consumerfilter.go)
// keeps these in consumerFilter.json.
type ConsumerFilterData struct {
	ConsumerGroup  string `json:"consumerGroup"`
	Topic          string `json:"topic"`
	Expression     string `json:"expression"`
	ExpressionType string `json:"expressionType"`
	BornTime       int64  `json:"bornTime"`
	DeadTime       int64  `json:"deadTime"`
	ClientVersion  int64  `json:"clientVersion"`
}
