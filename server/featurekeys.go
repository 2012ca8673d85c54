package server

import "github.com/rocketstore/rocketstore/broker"

// FeatureKeys are the broker.conf keys of message trace, SQL92 filters and
// transactional messages. Durations are milliseconds, as in broker.conf.
//
//	traceOn: true                     # TRACE_ON in send responses
//	regionId: DefaultRegion           # MSG_REGION in send responses (msgRegion is accepted too)
//	traceTopicEnable: false           # create msgTraceTopicName at start
//	msgTraceTopicName: RMQ_SYS_TRACE_TOPIC
//	enablePropertyFilter: false       # evaluate SQL92 subscriptions
//	transactionTimeOut: 6000          # a half message is checked back after this
//	transactionCheckMax: 15           # checks before a half message is discarded
//	transactionCheckInterval: 60000   # how often the check-back service runs
//	rejectTransactionMessage: false
type FeatureKeys struct {
	TraceOn                  *bool   `yaml:"traceOn"`
	RegionID                 *string `yaml:"regionId"`
	MsgRegion                *string `yaml:"msgRegion"`
	TraceTopicEnable         *bool   `yaml:"traceTopicEnable"`
	MsgTraceTopicName        *string `yaml:"msgTraceTopicName"`
	EnablePropertyFilter     *bool   `yaml:"enablePropertyFilter"`
	TransactionTimeOut       *int64  `yaml:"transactionTimeOut"`
	TransactionCheckMax      *int    `yaml:"transactionCheckMax"`
	TransactionCheckInterval *int64  `yaml:"transactionCheckInterval"`
	RejectTransactionMessage *bool   `yaml:"rejectTransactionMessage"`
}

func (k FeatureKeys) apply(bc *broker.Config, cluster *string) {
	if cluster != nil {
		bc.BrokerClusterName = *cluster
	}
	if k.TraceOn != nil {
		bc.TraceOff = !*k.TraceOn
	}
	for _, v := range []*string{k.RegionID, k.MsgRegion} {
		if v != nil {
			bc.RegionID = *v
		}
	}
	if k.TraceTopicEnable != nil {
		bc.TraceTopicEnable = *k.TraceTopicEnable
	}
	if k.MsgTraceTopicName != nil {
		bc.MsgTraceTopicName = *k.MsgTraceTopicName
	}
	if k.EnablePropertyFilter != nil {
		bc.EnablePropertyFilter = *k.EnablePropertyFilter
	}
	t := &bc.Transaction
	if k.TransactionTimeOut != nil {
		t.TimeOut = ms(*k.TransactionTimeOut)
	}
	if k.TransactionCheckMax != nil {
		t.CheckMax = *k.TransactionCheckMax
	}
	if k.TransactionCheckInterval != nil {
		t.CheckInterval = ms(*k.TransactionCheckInterval)
	}
	if k.RejectTransactionMessage != nil {
		t.Reject = *k.RejectTransactionMessage
	}
}
