package remoting

// Request codes (Java RequestCode) that rocketstore's broker and name-server
// roles answer or send. The values are RocketMQ's: never change them.
const (
	CodeSendMessage                int32 = 10
	CodePullMessage                int32 = 11
	CodeQueryMessage               int32 = 12
	CodeQueryConsumerOffset        int32 = 14
	CodeUpdateConsumerOffset       int32 = 15
	CodeUpdateAndCreateTopic       int32 = 17
	CodeSearchOffsetByTimestamp    int32 = 29
	CodeGetMaxOffset               int32 = 30
	CodeGetMinOffset               int32 = 31
	CodeViewMessageByID            int32 = 33
	CodeHeartBeat                  int32 = 34
	CodeUnregisterClient           int32 = 35
	CodeConsumerSendMsgBack        int32 = 36
	CodeEndTransaction             int32 = 37
	CodeRecallMessage              int32 = 370 // RocketMQ 5.x: cancel a timer message
	CodeGetConsumerListByGroup     int32 = 38
	CodeCheckTransactionState      int32 = 39
	CodeNotifyConsumerIDsChanged   int32 = 40
	CodeLockBatchMQ                int32 = 41
	CodeUnlockBatchMQ              int32 = 42
	CodeGetRouteInfoByTopic        int32 = 105
	CodeGetBrokerClusterInfo       int32 = 106
	CodeGetAllTopicListFromNamesrv int32 = 206
	CodeDeleteTopicInBroker        int32 = 215
	CodeDeleteTopicInNamesrv       int32 = 216
	CodeGetConsumerRunningInfo     int32 = 307
	CodeConsumeMessageDirectly     int32 = 309
	CodeSendMessageV2              int32 = 310
	CodeSendBatchMessage           int32 = 320
)

// Response codes (Java RemotingSysResponseCode and ResponseCode). Some share
// a number with a request code; the flag's response bit tells them apart.
const (
	CodeSuccess                 int32 = 0
	CodeSystemError             int32 = 1
	CodeSystemBusy              int32 = 2
	CodeRequestCodeNotSupported int32 = 3
	CodeTransactionFailed       int32 = 4
	CodeFlushDiskTimeout        int32 = 10
	CodeSlaveNotAvailable       int32 = 11
	CodeFlushSlaveTimeout       int32 = 12
	CodeMessageIllegal          int32 = 13
	CodeServiceNotAvailable     int32 = 14
	CodeVersionNotSupported     int32 = 15
	CodeNoPermission            int32 = 16
	CodeTopicNotExist           int32 = 17
	CodeTopicExistAlready       int32 = 18
	CodePullNotFound            int32 = 19
	CodePullRetryImmediately    int32 = 20
	CodePullOffsetMoved         int32 = 21
	CodeQueryNotFound           int32 = 22
	CodeSubscriptionParseFailed int32 = 23
	CodeSubscriptionNotExist    int32 = 24
	CodeSubscriptionNotLatest   int32 = 25
	CodeSubscriptionGroupAbsent int32 = 26
)
