package enginetest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/rocketstore/rocketstore/engine"
)

// This file decodes the store's files on its own, from the byte tables of
// docs/format.md (CommitLog, ConsumeQueue, checkpoint), without record:
// a writer bug mirrored in the engine's own decoder cannot hide here.

var formatTests = []test{
	{"IPv4StoreHost", func(t *testing.T, h *harness) { testFormat(t, h, v4Host) }},
	{"IPv6StoreHost", func(t *testing.T, h *harness) { testFormat(t, h, v6Host) }},
}

// specRecord is one CommitLog record as the spec lays it out.
type specRecord struct {
	totalSize      int32
	magic          uint32
	bodyCRC        int32
	queueID        int32
	flag           int32
	queueOffset    int64
	physicalOffset int64
	sysFlag        int32
	bornTimestamp  int64
	bornHost       netip.AddrPort
	storeTimestamp int64
	storeHost      netip.AddrPort
	reconsumeTimes int32
	preparedTxOff  int64
	body           []byte
	topic          string
	properties     map[string]string
}

const (
	specMagicMessage = 0xDAA320A7
	specMagicBlank   = 0xCBD43194
)

// specDecode decodes the record at b[0:]. For a BLANK record only
// totalSize and magic are set.
func specDecode(b []byte) (specRecord, error) {
	var r specRecord
	if len(b) < 8 {
		return r, fmt.Errorf("%d bytes left", len(b))
	}
	be := binary.BigEndian
	r.totalSize = int32(be.Uint32(b[0:]))
	r.magic = be.Uint32(b[4:])
	if r.magic == specMagicBlank {
		return r, nil
	}
	if r.magic != specMagicMessage {
		return r, fmt.Errorf("magic %08X", r.magic)
	}
	if r.totalSize < 91 || int(r.totalSize) > len(b) {
		return r, fmt.Errorf("total size %d", r.totalSize)
	}
	b = b[:r.totalSize]
	r.bodyCRC = int32(be.Uint32(b[8:]))
	r.queueID = int32(be.Uint32(b[12:]))
	r.flag = int32(be.Uint32(b[16:]))
	r.queueOffset = int64(be.Uint64(b[20:]))
	r.physicalOffset = int64(be.Uint64(b[28:]))
	r.sysFlag = int32(be.Uint32(b[36:]))
	r.bornTimestamp = int64(be.Uint64(b[40:]))
	p := 48
	host := func(v6 bool) netip.AddrPort {
		n := 4
		if v6 {
			n = 16
		}
		a, _ := netip.AddrFromSlice(b[p : p+n])
		port := be.Uint32(b[p+n:])
		p += n + 4
		return netip.AddrPortFrom(a, uint16(port))
	}
	r.bornHost = host(r.sysFlag&0x10 != 0)
	r.storeTimestamp = int64(be.Uint64(b[p:]))
	p += 8
	r.storeHost = host(r.sysFlag&0x20 != 0)
	r.reconsumeTimes = int32(be.Uint32(b[p:]))
	p += 4
	r.preparedTxOff = int64(be.Uint64(b[p:]))
	p += 8
	bodyLen := int(be.Uint32(b[p:]))
	p += 4
	r.body = b[p : p+bodyLen]
	p += bodyLen
	topicLen := int(b[p])
	p++
	r.topic = string(b[p : p+topicLen])
	p += topicLen
	propLen := int(be.Uint16(b[p:]))
	p += 2
	r.properties = specProperties(string(b[p : p+propLen]))
	p += propLen
	if p != int(r.totalSize) {
		return r, fmt.Errorf("fields end at %d, TOTALSIZE %d", p, r.totalSize)
	}
	return r, nil
}

// specProperties parses "k\x01v\x02k\x01v" (a trailing \x02 allowed).
func specProperties(s string) map[string]string {
	m := map[string]string{}
	for _, item := range strings.Split(s, "\x02") {
		if len(item) < 3 {
			continue
		}
		k, v, ok := strings.Cut(item, "\x01")
		if ok && k != "" && v != "" {
			m[k] = v
		}
	}
	return m
}

// javaHash is Java's String.hashCode over UTF-16 code units.
func javaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// expected is what the test put, with the store's answer.
type expected struct {
	m   *engine.Message
	res engine.PutResult
	// index within a batch (records of a batch share one PutResult).
	k int
}

func testFormat(t *testing.T, h *harness, storeHost netip.AddrPort) {
	cfg := tinyConfig()
	cfg.StoreHost = storeHost
	s := h.open(cfg)
	var exp []expected
	offsets := map[int64]int{} // commitlog offset -> index in exp
	add := func(m *engine.Message, res engine.PutResult, k int, off int64) {
		offsets[off] = len(exp)
		exp = append(exp, expected{m, res, k})
	}
	for i := 0; i < 70; i++ {
		m := msg([]string{"fmtA", "fmtB"}[i%2], int32(i%3), strings.Repeat(fmt.Sprint(i), i%40), []string{"TagA", "", "\u00e9\U0001F600"}[i%3], fmt.Sprint("key", i))
		m.Flag = int32(i * 7)
		m.BornTimestamp = baseTime - 1000 + int64(i)
		m.ReconsumeTimes = int32(i % 4)
		if i%5 == 0 {
			m.BornHost = v6Host
		} else {
			m.BornHost = v4Host
		}
		switch i % 11 {
		case 3:
			m.SysFlag = 0x4 // prepared
		case 4:
			m.SysFlag = 0x8 // commit
			m.PreparedTransactionOffset = 123
		case 5:
			m.SysFlag = 0xC // rollback
			m.PreparedTransactionOffset = 456
		}
		res := put(t, s, m)
		add(m, res, 0, res.WroteOffset)
		if i%17 == 0 {
			var batch []*engine.Message
			for k := 0; k < 3; k++ {
				batch = append(batch, msg("fmtBatch", 0, fmt.Sprint("batch ", i, k), "BT", ""))
			}
			res, err := s.PutBatch(t.Context(), batch)
			if err != nil {
				t.Fatal(err)
			}
			off := res.WroteOffset
			for k, bm := range batch {
				add(bm, res, k, off)
				off += int64(91 + len(bm.Body) + len(bm.Topic) + len(specPropsBytes(bm.Properties)) + hostExtra(bm, storeHost))
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkCommitLog(t, h, exp, offsets, storeHost)
	checkConsumeQueues(t, h, exp)
	// physicMsgTimestamp is the last record's; logicsMsgTimestamp the last
	// record's that went into a ConsumeQueue (not prepared or rollback).
	last := exp[len(exp)-1].res.StoreTimestamp
	var lastLogic int64
	for _, e := range exp {
		if t := e.m.SysFlag & 0xC; t != 0x4 && t != 0xC {
			lastLogic = e.res.StoreTimestamp
		}
	}
	b := fileBytes(t, h.fs, "checkpoint")
	for k, want := range []int64{last, lastLogic, 0} {
		if got := int64(binary.BigEndian.Uint64(b[8*k:])); got != want {
			t.Fatalf("checkpoint long %d: %d, want %d", k, got, want)
		}
	}
}

func hostExtra(m *engine.Message, store netip.AddrPort) int {
	n := 0
	if m.BornHost.Addr().Is6() {
		n += 12
	}
	if store.Addr().Is6() {
		n += 12
	}
	return n
}

// specPropsBytes encodes properties the way RocketMQ 4.9.4 does (sorted
// here, as the engine documents, so the bytes can be compared).
func specPropsBytes(p map[string]string) []byte {
	var keys []string
	for k, v := range p {
		if v != "" {
			keys = append(keys, k)
		}
	}
	for i := range keys { // insertion sort, to stay independent
		for j := i; j > 0 && keys[j-1] > keys[j]; j-- {
			keys[j-1], keys[j] = keys[j], keys[j-1]
		}
	}
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(2)
		}
		b.WriteString(k)
		b.WriteByte(1)
		b.WriteString(p[k])
	}
	return b.Bytes()
}

func checkCommitLog(t *testing.T, h *harness, exp []expected, offsets map[int64]int, storeHost netip.AddrPort) {
	names, err := h.fs.List("commitlog")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for fi, name := range names {
		if name != fmt.Sprintf("%020d", fi*4096) {
			t.Fatalf("commitlog file %d is named %q", fi, name)
		}
		b := fileBytes(t, h.fs, "commitlog/"+name)
		if len(b) != 4096 {
			t.Fatalf("%s is %d bytes", name, len(b))
		}
		pos := 0
		for pos < len(b) {
			if binary.BigEndian.Uint64(b[pos:]) == 0 && fi == len(names)-1 {
				break // the end of the data
			}
			r, err := specDecode(b[pos:])
			if err != nil {
				t.Fatalf("%s at %d: %v", name, pos, err)
			}
			if r.magic == specMagicBlank {
				if int(r.totalSize) != len(b)-pos {
					t.Fatalf("%s at %d: blank of %d bytes, %d left", name, pos, r.totalSize, len(b)-pos)
				}
				pos = len(b)
				break
			}
			off := int64(fi*4096 + pos)
			i, ok := offsets[off]
			if !ok {
				t.Fatalf("record at %d was not put", off)
			}
			checkRecord(t, r, exp[i], off, storeHost)
			seen++
			pos += int(r.totalSize)
		}
		for _, c := range b[pos:] {
			if c != 0 {
				t.Fatalf("%s: non-zero byte after the data at %d", name, pos)
			}
		}
	}
	if seen != len(exp) {
		t.Fatalf("decoded %d records, put %d", seen, len(exp))
	}
}

func checkRecord(t *testing.T, r specRecord, e expected, off int64, storeHost netip.AddrPort) {
	t.Helper()
	m := e.m
	wantSys := m.SysFlag
	if m.BornHost.Addr().Is6() {
		wantSys |= 0x10
	}
	if storeHost.Addr().Is6() {
		wantSys |= 0x20
	}
	wantQOff := e.res.QueueOffset + int64(e.k)
	if t := m.SysFlag & 0xC; t == 0x4 || t == 0xC {
		wantQOff = 0
	}
	wantBorn, wantBornHost := m.BornTimestamp, m.BornHost
	if wantBorn == 0 {
		wantBorn = e.res.StoreTimestamp // the store fills a missing born time
	}
	if !wantBornHost.IsValid() {
		wantBornHost = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	props := specPropsBytes(m.Properties)
	wantSize := 91 + len(m.Body) + len(m.Topic) + len(props) + hostExtra(m, storeHost)
	checks := []struct {
		name      string
		got, want any
	}{
		{"TOTALSIZE", int(r.totalSize), wantSize},
		{"BODYCRC", r.bodyCRC, int32(crc32.ChecksumIEEE(m.Body) & 0x7FFFFFFF)},
		{"QUEUEID", r.queueID, m.QueueID},
		{"FLAG", r.flag, m.Flag},
		{"QUEUEOFFSET", r.queueOffset, wantQOff},
		{"PHYSICALOFFSET", r.physicalOffset, off},
		{"SYSFLAG", r.sysFlag, wantSys},
		{"BORNTIMESTAMP", r.bornTimestamp, wantBorn},
		{"BORNHOST", r.bornHost, wantBornHost},
		{"STORETIMESTAMP", r.storeTimestamp, e.res.StoreTimestamp},
		{"STOREHOSTADDRESS", r.storeHost, storeHost},
		{"RECONSUMETIMES", r.reconsumeTimes, m.ReconsumeTimes},
		{"PREPARED TX OFFSET", r.preparedTxOff, m.PreparedTransactionOffset},
		{"BODY", string(r.body), string(m.Body)},
		{"TOPIC", r.topic, m.Topic},
		{"PROPERTIES", fmt.Sprint(r.properties), fmt.Sprint(specProperties(string(props)))},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Fatalf("record at %d: %s = %v, want %v", off, c.name, c.got, c.want)
		}
	}
}

func checkConsumeQueues(t *testing.T, h *harness, exp []expected) {
	type unit struct {
		off  int64
		size int32
		tags int64
	}
	want := map[string][]unit{}
	for _, e := range exp {
		if t := e.m.SysFlag & 0xC; t == 0x4 || t == 0xC {
			continue
		}
		key := fmt.Sprintf("consumequeue/%s/%d", e.m.Topic, e.m.QueueID)
		var tags int64
		if tg := e.m.Properties["TAGS"]; tg != "" {
			tags = int64(javaHash(tg))
		}
		idx := e.res.QueueOffset + int64(e.k)
		if int64(len(want[key])) != idx {
			t.Fatalf("%s: expected unit %d, have %d", key, idx, len(want[key]))
		}
		off := e.res.WroteOffset
		size := int32(0)
		// Records of a batch: recompute offsets from the unit list.
		if e.k > 0 {
			prev := want[key][idx-1]
			off = prev.off + int64(prev.size)
		}
		size = int32(91 + len(e.m.Body) + len(e.m.Topic) + len(specPropsBytes(e.m.Properties)) + hostExtra(e.m, e.res.StoreHost))
		want[key] = append(want[key], unit{off, size, tags})
	}
	for dir, units := range want {
		names, err := h.fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		var all []byte
		for i, n := range names {
			if n != fmt.Sprintf("%020d", i*8*20) {
				t.Fatalf("%s: file %d named %s", dir, i, n)
			}
			b := fileBytes(t, h.fs, dir+"/"+n)
			if len(b) != 8*20 {
				t.Fatalf("%s/%s is %d bytes", dir, n, len(b))
			}
			all = append(all, b...)
		}
		for i, u := range units {
			p := all[i*20:]
			got := unit{int64(binary.BigEndian.Uint64(p)), int32(binary.BigEndian.Uint32(p[8:])), int64(binary.BigEndian.Uint64(p[12:]))}
			if got != u {
				t.Fatalf("%s unit %d: %+v, want %+v", dir, i, got, u)
			}
		}
		for i, c := range all[len(units)*20:] {
			if c != 0 {
				t.Fatalf("%s: non-zero byte %d after the last unit", dir, i)
			}
		}
	}
}
