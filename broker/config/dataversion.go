package config

// DataVersion orders versions of a config table (RocketMQ's DataVersion).
type DataVersion struct {
	Counter   int64 `json:"counter"`
	Timestamp int64 `json:"timestamp"`
}

// next returns the version after v at time now (ms).
func (v DataVersion) next(now int64) DataVersion {
	return DataVersion{Counter: v.Counter + 1, Timestamp: now}
}
