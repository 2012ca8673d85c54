package verify

// progressStep is how many bytes pass between two progress calls inside a
// file: often enough for a bar to move on 1 GiB CommitLog files, rarely
// enough to cost nothing.
const progressStep = 16 << 20

// progress counts checked bytes and calls the user's callback.
type progress struct {
	fn          func(done, total int64)
	done, total int64
	last        int64 // done at the last call
}

// advance adds n checked bytes, calling the callback every progressStep.
func (p *progress) advance(n int64) {
	p.done += n
	if p.done-p.last >= progressStep {
		p.report()
	}
}

// report calls the callback with the current count.
func (p *progress) report() {
	if p.fn != nil {
		p.last = p.done
		p.fn(min(p.done, p.total), p.total)
	}
}

// finish reports completion, whatever was skipped on the way.
func (p *progress) finish() {
	p.done = p.total
	p.report()
}
