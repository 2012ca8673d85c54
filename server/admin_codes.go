package server

// The name server's admin request codes (RocketMQ 4.9's RequestCode),
// served in admin_namesrv.go and admin_kv.go; 318 and 319 are answered by
// package adminapi, in the name-server role.
const (
	codePutKVConfig              int32 = 100
	codeGetKVConfig              int32 = 101
	codeDeleteKVConfig           int32 = 102
	codeWipeWritePermOfBroker    int32 = 205
	codeGetKVListByNamespace     int32 = 219
	codeGetTopicsByCluster       int32 = 224
	codeGetSystemTopicListFromNs int32 = 304
	codeUpdateNamesrvConfig      int32 = 318
	codeGetNamesrvConfig         int32 = 319
	codeQueryDataVersion         int32 = 322
	codeAddWritePermOfBroker     int32 = 327
)
