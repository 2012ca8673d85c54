package remoting

// This file holds the extFields of the hot requests without a map. A
// map per SEND_MESSAGE and PULL_MESSAGE (a dozen hashed inserts, then a
// dozen hashed lookups, then a sorted copy to encode the answer) was a
// large part of the server's cost per message. The decoder leaves
// ExtFields nil for those requests and keeps the entries in a slice in
// input order; Ext and the typed readers search it (later entries win, as
// the map's overwrite did), and ExtMap builds the map for code that needs
// all of it (ACL signatures). Responses made with NewLeanResponse keep
// what SetExt sets in the same slice.

// leanRequest reports whether a request with this code is decoded without
// an extFields map: the send and pull codes, which carry every message.
func leanRequest(code int32) bool {
	switch code {
	case CodeSendMessage, CodeSendMessageV2, CodeSendBatchMessage, CodePullMessage:
		return true
	}
	return false
}

// Ext returns the extFields entry name and whether it is present, from
// ExtFields or, for a lean command, its entries. It does not allocate.
func (c *RemotingCommand) Ext(name string) (string, bool) {
	if c.ExtFields != nil || !c.lean {
		v, ok := c.ExtFields[name]
		return v, ok
	}
	for i := len(c.ext) - 1; i >= 0; i-- {
		if c.ext[i].k == name {
			return c.ext[i].v, true
		}
	}
	return "", false
}

// ExtMap returns the extFields as a map, building it (once) from a lean
// command's entries; afterwards ExtFields holds it and is the command's
// header. Handlers of the hot codes call it only when they need every
// entry or change them.
func (c *RemotingCommand) ExtMap() map[string]string {
	if c.ExtFields != nil {
		return c.ExtFields
	}
	m := make(map[string]string, len(c.ext))
	for _, p := range c.ext {
		m[p.k] = p.v
	}
	c.ExtFields, c.ext, c.lean = m, nil, false
	return m
}

// NewLeanResponse is NewResponse without an extFields map: SetExt keeps
// the entries in a slice that AppendFrame encodes, and Ext or ExtMap read
// them. The hot handlers answer with it.
func (c *RemotingCommand) NewLeanResponse(code int32, remark string) *RemotingCommand {
	r := &leanResponse{cmd: RemotingCommand{
		Code:          code,
		Language:      DefaultLanguage,
		Version:       DefaultVersion,
		Opaque:        c.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		SerializeType: c.SerializeType,
		lean:          true,
	}}
	r.cmd.ext = r.entries[:0]
	return &r.cmd
}

// leanEntriesInline is how many extFields entries a lean command holds in
// its own allocation (a send answer has five, a send request thirteen).
const leanEntriesInline = 16

// leanCommand is a lean command and room for its entries, allocated
// together: one allocation where a command, its slice and the slice's
// growth took up to five.
type leanCommand struct {
	cmd     RemotingCommand
	entries [leanEntriesInline]extPair
}

// leanResponseEntries is how many extFields entries a lean response holds
// in its own allocation: a send answer sets up to six (msgId, queueId,
// queueOffset, recallHandle, MSG_REGION, TRACE_ON), a pull answer four.
// Room for a request's sixteen made every answer a 704-byte allocation,
// the largest share of the bytes a loaded server allocated (416 now);
// more entries than this grow the slice on the heap.
const leanResponseEntries = 8

// leanResponse is NewLeanResponse's command and room for its entries.
type leanResponse struct {
	cmd     RemotingCommand
	entries [leanResponseEntries]extPair
}

// newLeanCommand returns a lean copy of c (decoded fields) with room for
// n entries, len 0.
func newLeanCommand(c *RemotingCommand, n int) *RemotingCommand {
	if n > leanEntriesInline {
		d := *c
		d.lean, d.ext = true, make([]extPair, 0, n)
		return &d
	}
	r := &leanCommand{cmd: *c}
	r.cmd.lean, r.cmd.ext = true, r.entries[:0]
	return &r.cmd
}

// setLeanExt sets name in a lean command's entries.
func (c *RemotingCommand) setLeanExt(name, value string) {
	for i := range c.ext {
		if c.ext[i].k == name {
			c.ext[i].v = value
			return
		}
	}
	c.ext = append(c.ext, extPair{name, value})
}

// leanExtSorted appends a lean command's entries to buf in key order, the
// last of equal keys only, and returns them with their size as sortedExt
// does.
func leanExtSorted(ext []extPair, buf []extPair) ([]extPair, int) {
	n := 0
	for i := len(ext) - 1; i >= 0; i-- {
		p := ext[i]
		j := len(buf)
		dup := false
		for _, q := range buf {
			if q.k == p.k {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		n += len(p.k) + len(p.v) + 8
		buf = append(buf, p)
		for ; j > 0 && buf[j-1].k > p.k; j-- {
			buf[j] = buf[j-1]
		}
		buf[j] = p
	}
	return buf, n
}

// EachExt calls yield with each extFields entry, in input order for a
// lean command (a later entry of the same name then overrides an earlier
// one, as Ext reads it), until yield returns false. A handler that reads
// a dozen entries reads them in one pass with it instead of a search
// each. It does not allocate.
func (c *RemotingCommand) EachExt(yield func(name, value string) bool) {
	if c.ExtFields != nil || !c.lean {
		for k, v := range c.ExtFields {
			if !yield(k, v) {
				return
			}
		}
		return
	}
	for _, p := range c.ext {
		if !yield(p.k, p.v) {
			return
		}
	}
}
