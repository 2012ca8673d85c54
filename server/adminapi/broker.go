package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/internal/units"
	"github.com/rocketstore/rocketstore/remoting"
)

// BrokerVersion is the RocketMQ version rocketstore's broker reports: the
// 4.9.4 semantics it follows (MQVersion.Version.V4_9_4.ordinal() = 401).
const (
	BrokerVersion     = 401
	BrokerVersionDesc = "V4_9_4"
)

// adminBody answers SUCCESS with v in fastjson form, as the Java broker
// writes its bodies.
func adminBody(req *remoting.RemotingCommand, v any) (*remoting.RemotingCommand, error) {
	body, err := admin.Marshal(v)
	if err != nil {
		return nil, err
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = body
	return resp, nil
}

// RuntimeInfo returns the broker's runtime information, the KVTable of
// GET_BROKER_RUNTIME_INFO (28), with RocketMQ's key names.
func (a *API) RuntimeInfo() map[string]string {
	now := a.cfg.Clock.Now()
	st := a.b.Store()
	putTotal, getTotal := a.b.Stats().Totals()
	morning, yesterday := a.mornings()
	m := map[string]string{
		"brokerVersionDesc":               BrokerVersionDesc,
		"brokerVersion":                   strconv.Itoa(BrokerVersion),
		"bootTimestamp":                   strconv.FormatInt(a.stats.boot.UnixMilli(), 10),
		"runtime":                         runtimeDesc(now.Sub(a.stats.boot)),
		"startAcceptSendRequestTimeStamp": "0",
		"msgPutTotalTodayNow":             strconv.FormatInt(putTotal, 10),
		"msgGetTotalTodayNow":             strconv.FormatInt(getTotal, 10),
		"msgPutTotalTodayMorning":         strconv.FormatInt(morning.put, 10),
		"msgGetTotalTodayMorning":         strconv.FormatInt(morning.got, 10),
		"msgPutTotalYesterdayMorning":     strconv.FormatInt(yesterday.put, 10),
		"msgGetTotalYesterdayMorning":     strconv.FormatInt(yesterday.got, 10),
		"putTps":                          tpsTriple(func(d time.Duration) float64 { p, _, _, _ := a.rates(d); return p }),
		"getTransferedTps":                tpsTriple(func(d time.Duration) float64 { _, g, _, _ := a.rates(d); return g }),
		"getTotalTps":                     tpsTriple(func(d time.Duration) float64 { _, g, _, _ := a.rates(d); return g }),
		"commitLogMinOffset":              strconv.FormatInt(st.CommitLog().MinOffset(), 10),
		"commitLogMaxOffset":              strconv.FormatInt(st.CommitLog().MaxOffset(), 10),
		"remainHowManyDataToFlush":        units.Bytes(uint64(max(0, st.CommitLog().MaxOffset()-st.CommitLog().FlushedWhere()))),
		"dispatchBehindBytes":             strconv.FormatInt(st.DispatchBehindBytes(), 10),
		"pageCacheLockTimeMills":          "0",
		"earliestMessageTimeStamp":        strconv.FormatInt(a.earliestMessageTime(), 10),
		"sendThreadPoolQueueSize":         "0",
		"pullThreadPoolQueueSize":         "0",
		"queryThreadPoolQueueSize":        "0",
		"brokerName":                      a.cfg.BrokerName,
		"brokerAddr":                      a.host.BrokerAddr(),
	}
	if total, free, ok := diskSpace(a.host.StoreDir()); ok {
		m["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.", units.Bytes(total), units.Bytes(free))
		m["commitLogDiskRatio"] = strconv.FormatFloat(float64(total-free)/float64(total), 'f', -1, 64)
	}
	return m
}

// diskSpace returns the total and free bytes of the file system holding dir.
func diskSpace(dir string) (total, free uint64, ok bool) {
	if dir == "" {
		return 0, 0, false
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(dir, &fs) != nil || fs.Blocks == 0 {
		return 0, 0, false
	}
	return fs.Blocks * uint64(fs.Bsize), fs.Bavail * uint64(fs.Bsize), true
}

// earliestMessageTime is the store time of the oldest message in the
// CommitLog, or 0 when it is empty.
func (a *API) earliestMessageTime() int64 {
	st := a.b.Store()
	m, err := st.LookMessageByOffset(st.CommitLog().MinOffset())
	if err != nil {
		return 0
	}
	return m.StoreTimestamp
}

// getBrokerRuntimeInfo answers GET_BROKER_RUNTIME_INFO (28): KVTable.
func (a *API) getBrokerRuntimeInfo(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return adminBody(req, admin.KVTable{Table: a.RuntimeInfo()})
}

// brokerConfig is the broker's settings under broker.conf names.
func (a *API) brokerConfig() map[string]string {
	sc := a.b.Store().Config()
	levels := make([]string, len(sc.DelayLevels))
	for i, d := range sc.DelayLevels {
		levels[i] = delayLevelString(d)
	}
	return map[string]string{
		"brokerName":             a.cfg.BrokerName,
		"brokerClusterName":      a.cfg.ClusterName,
		"brokerId":               "0",
		"brokerRole":             "ASYNC_MASTER",
		"storePathRootDir":       a.host.StoreDir(),
		"flushDiskType":          sc.FlushDiskType.String(),
		"mapedFileSizeCommitLog": strconv.FormatInt(sc.CommitLogFileSize, 10),
		"maxMessageSize":         strconv.Itoa(sc.MaxMessageSize),
		"messageDelayLevel":      strings.Join(levels, " "),
		"brokerIP1":              hostOf(a.host.BrokerAddr()),
		"listenPort":             portOf(a.host.BrokerAddr()),
	}
}

func delayLevelString(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

func hostOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return strings.Trim(addr[:i], "[]")
	}
	return addr
}

func portOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[i+1:]
	}
	return ""
}

// properties formats m as Java properties, sorted by key (MixAll's
// properties2String).
func properties(m map[string]string) []byte {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + "=" + m[k] + "\n")
	}
	return []byte(b.String())
}

// getBrokerConfig answers GET_BROKER_CONFIG (26): the settings as
// properties text, ext version = the config's DataVersion JSON.
func (a *API) getBrokerConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = properties(a.brokerConfig())
	v, _ := json.Marshal(admin.DataVersion{Timestamp: a.stats.boot.UnixMilli()})
	resp.SetExt("version", string(v))
	return resp, nil
}

// errConfigAtStart is the remark of the config updates rocketstore does
// not take at run time.
const errConfigAtStart = "rocketstore reads its configuration at start and does not change it at run time: " +
	"edit the YAML file given to `rocketstore serve --config` and restart"

// updateBrokerConfig answers UPDATE_BROKER_CONFIG (25) and
// UPDATE_NAMESRV_CONFIG (318): SYSTEM_ERROR, naming the keys, when the
// body sets anything (an empty update succeeds, as in RocketMQ).
func (a *API) updateConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	keys := parseProperties(req.Body)
	if len(keys) == 0 {
		return req.NewResponse(remoting.CodeSuccess, ""), nil
	}
	return req.NewResponse(remoting.CodeSystemError, errConfigAtStart+" (keys: "+strings.Join(slices.Sorted(maps.Keys(keys)), ", ")+")"), nil
}

// parseProperties reads "key=value" lines (MixAll.string2Properties).
func parseProperties(b []byte) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}

// getNamesrvConfig answers GET_NAMESRV_CONFIG (319): the name server's
// settings as properties text.
func (a *API) getNamesrvConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = properties(map[string]string{
		"listenPort":                  portOf(a.host.BrokerAddr()),
		"clusterTest":                 "false",
		"orderMessageEnable":          "false",
		"scanNotActiveBrokerInterval": "5000",
	})
	return resp, nil
}

// viewBrokerStatsData answers VIEW_BROKER_STATS_DATA (315): header
// statsName, statsKey; BrokerStatsData of the last minute, hour and day.
// The names are TOPIC_PUT_NUMS (key topic), GROUP_GET_NUMS (key
// topic@group), BROKER_PUT_NUMS and BROKER_GET_NUMS (key cluster name).
func (a *API) viewBrokerStatsData(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	name, key := f.String("statsName"), f.String("statsKey")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	d, ok := a.brokerStatsData(name, key)
	if !ok {
		return req.NewResponse(remoting.CodeSystemError, fmt.Sprintf("The stats <%s> <%s> not exist", name, key)), nil
	}
	return adminBody(req, d)
}
