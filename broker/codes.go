package broker

import "strconv"

// ResponseCode is a RocketMQ remoting response code (ResponseCode.java).
type ResponseCode int

// Response codes, with RocketMQ's names and values.
const (
	Success                   ResponseCode = 0
	SystemError               ResponseCode = 1
	SystemBusy                ResponseCode = 2
	RequestCodeNotSupported   ResponseCode = 3
	NoPermission              ResponseCode = 16
	TopicNotExist             ResponseCode = 17
	PullNotFound              ResponseCode = 19
	PullRetryImmediately      ResponseCode = 20
	PullOffsetMoved           ResponseCode = 21
	QueryNotFound             ResponseCode = 22
	SubscriptionParseFailed   ResponseCode = 23
	SubscriptionNotExist      ResponseCode = 24
	SubscriptionNotLatest     ResponseCode = 25
	SubscriptionGroupNotExist ResponseCode = 26
	FilterDataNotExist        ResponseCode = 27
	FilterDataNotLatest       ResponseCode = 28
)

var codeNames = map[ResponseCode]string{
	Success: "SUCCESS", SystemError: "SYSTEM_ERROR", SystemBusy: "SYSTEM_BUSY",
	RequestCodeNotSupported: "REQUEST_CODE_NOT_SUPPORTED", NoPermission: "NO_PERMISSION",
	TopicNotExist: "TOPIC_NOT_EXIST", PullNotFound: "PULL_NOT_FOUND",
	PullRetryImmediately: "PULL_RETRY_IMMEDIATELY", PullOffsetMoved: "PULL_OFFSET_MOVED",
	QueryNotFound: "QUERY_NOT_FOUND", SubscriptionParseFailed: "SUBSCRIPTION_PARSE_FAILED",
	SubscriptionNotExist: "SUBSCRIPTION_NOT_EXIST", SubscriptionNotLatest: "SUBSCRIPTION_NOT_LATEST",
	SubscriptionGroupNotExist: "SUBSCRIPTION_GROUP_NOT_EXIST", FilterDataNotExist: "FILTER_DATA_NOT_EXIST",
	FilterDataNotLatest: "FILTER_DATA_NOT_LATEST",
}

// String returns RocketMQ's name for the code.
func (c ResponseCode) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "CODE_" + strconv.Itoa(int(c))
}

// PullSysFlag holds the PullSysFlag bits of a pull request.
type PullSysFlag int32

// PullSysFlag bits (RocketMQ's PullSysFlag).
const (
	FlagCommitOffset PullSysFlag = 0x1
	FlagSuspend      PullSysFlag = 0x2
	FlagSubscription PullSysFlag = 0x4
	FlagClassFilter  PullSysFlag = 0x8
	FlagLitePull     PullSysFlag = 0x10
)

// Has reports whether every bit of f is set.
func (s PullSysFlag) Has(f PullSysFlag) bool { return s&f == f }

// MasterID is the broker id of a master.
const MasterID = 0
