package engine

// DamagedRange is a stretch of the CommitLog that recovery found damaged
// (a record failing its checks) with intact records after it. The bytes
// stay on disk for inspection; nothing in the range is dispatched.
type DamagedRange struct {
	// File is the CommitLog file holding the start of the range.
	File string
	// Offset is the CommitLog offset of the damaged record; End the
	// offset of the next intact record (or file) after it.
	Offset, End int64
	// Reason is the check the record failed.
	Reason error
}
