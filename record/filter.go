package record

// MessageFilter is the method set getMessage uses to select messages
// (package filter implements it for tags and SQL92). A filter may also
// implement NeedsProperties() bool; only then does the engine decode a
// record's properties for IsMatchedByCommitLog.
type MessageFilter interface {
	// IsMatchedByConsumeQueue is checked on the ConsumeQueue unit's
	// tagsCode before the CommitLog is read.
	IsMatchedByConsumeQueue(tagsCode int64) bool
	// IsMatchedByCommitLog is checked after the record is read; props are
	// the decoded properties (may be nil when unknown).
	IsMatchedByCommitLog(props map[string]string) bool
}
