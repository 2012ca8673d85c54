package server

// Admin request codes (RocketMQ 4.9's RequestCode) served in admin_*.go.
const (
	codeGetAllTopicConfig              int32 = 21
	codeUpdateBrokerConfig             int32 = 25
	codeGetBrokerConfig                int32 = 26
	codeGetBrokerRuntimeInfo           int32 = 28
	codeGetAllConsumerOffset           int32 = 43
	codeGetAllDelayOffset              int32 = 45
	codeGetTimerMetrics                int32 = 61 // RocketMQ 5.x
	codePutKVConfig                    int32 = 100
	codeGetKVConfig                    int32 = 101
	codeDeleteKVConfig                 int32 = 102
	codeUpdateAndCreateSubscriptionGrp int32 = 200
	codeGetAllSubscriptionGroupConfig  int32 = 201
	codeGetTopicStatsInfo              int32 = 202
	codeGetConsumerConnectionList      int32 = 203
	codeGetProducerConnectionList      int32 = 204
	codeWipeWritePermOfBroker          int32 = 205
	codeDeleteSubscriptionGroup        int32 = 207
	codeGetConsumeStats                int32 = 208
	codeGetKVListByNamespace           int32 = 219
	codeGetTopicsByCluster             int32 = 224
	codeQueryTopicConsumeByWho         int32 = 300
	codeQueryConsumeTimeSpan           int32 = 303
	codeGetSystemTopicListFromNs       int32 = 304
	codeGetSystemTopicListFromBroker   int32 = 305
	codeQueryCorrectionOffset          int32 = 308
	codeCloneGroupOffset               int32 = 314
	codeViewBrokerStatsData            int32 = 315
	codeGetBrokerConsumeStats          int32 = 317
	codeUpdateNamesrvConfig            int32 = 318
	codeGetNamesrvConfig               int32 = 319
	codeQueryConsumeQueue              int32 = 321
	codeQueryDataVersion               int32 = 322
	codeAddWritePermOfBroker           int32 = 327
)
