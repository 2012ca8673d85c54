package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Workload groups.
const (
	GroupPut      = "put"
	GroupE2E      = "e2e"
	GroupLag      = "lag"
	GroupCatchUp  = "catchup"
	GroupRecovery = "recovery"
)

// Latency is a latency distribution in microseconds.
type Latency struct {
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50_us"`
	P99     float64 `json:"p99_us"`
	P999    float64 `json:"p999_us"`
	Max     float64 `json:"max_us"`
}

// Bound is a baseline figure measured on the same bytes in the same run.
type Bound struct {
	Name     string  `json:"name"`
	MsgsPerS float64 `json:"msgs_per_s"` // at the engine's record size
	MBPerS   float64 `json:"mb_per_s"`   // bytes actually moved
	// Ratio is the engine's figure over the bound's (msgs/s). When the
	// workload and its bound alternated (Pairs > 1), it is the median of
	// the pairs' ratios, and RatioMin and RatioMax are their extremes.
	Ratio    float64 `json:"ratio"`
	RatioMin float64 `json:"ratio_min,omitempty"`
	RatioMax float64 `json:"ratio_max,omitempty"`
	Pairs    int     `json:"pairs,omitempty"`
	Note     string  `json:"note,omitempty"`
}

// setRatios sets the ratio from the workload/bound ratios of alternating
// pairs: their median, min and max. Without pairs it leaves b as it is.
func (b *Bound) setRatios(ratios []float64) {
	if len(ratios) == 0 {
		return
	}
	sp := spreadOf(ratios)
	b.Ratio, b.RatioMin, b.RatioMax, b.Pairs = sp.med, sp.min, sp.max, len(ratios)
}

// ratioCell renders the ratio: min / median / max of its pairs when it
// has several. It is marked when the workload beat its bound beyond
// noise: when even the pair least favourable to the workload is over
// 100 % (a single ratio: when it is). A median over 100 % with pairs
// under it is the disk's or the cores' noise: the workload and its bound
// do the same I/O (sync puts are the CommitLog's pwrite+msync and little
// else), and slices tens of milliseconds long met different disks.
func (b *Bound) ratioCell() (cell string, over bool) {
	cell = pct(b.Ratio)
	low := b.Ratio
	if b.Pairs > 1 {
		cell = fmt.Sprintf("%s / %s / %s", strings.TrimSuffix(pct(b.RatioMin), " %"), strings.TrimSuffix(pct(b.Ratio), " %"), pct(b.RatioMax))
		low = b.RatioMin
	}
	if low > 1 {
		return cell + " †", true
	}
	return cell, false
}

// Peer is the NATS JetStream figure of the same workload.
type Peer struct {
	Name     string  `json:"name"`
	MsgsPerS float64 `json:"msgs_per_s"`
	// Ratio is ours over theirs (msgs/s).
	Ratio float64  `json:"ratio"`
	P99   *float64 `json:"p99_us,omitempty"`
}

// Result is one measured workload.
type Result struct {
	Group     string   `json:"group"`
	Backend   string   `json:"backend"` // mmap, memfs or nats
	Body      int      `json:"body"`
	Producers int      `json:"producers,omitempty"`
	Flush     string   `json:"flush,omitempty"` // async or sync
	Msgs      int64    `json:"msgs"`
	BodyBytes int64    `json:"body_bytes"`
	LogBytes  int64    `json:"log_bytes"` // whole records written or read
	Seconds   float64  `json:"seconds"`
	MsgsPerS  float64  `json:"msgs_per_s"`
	MBPerS    float64  `json:"mb_per_s"` // bodies
	Latency   *Latency `json:"latency,omitempty"`
	Bound     *Bound   `json:"bound,omitempty"`
	// Physical is a second bound beside the first, measured another way
	// (recovery: CRC32 of the bytes read with pread beside read through
	// a fresh mapping).
	Physical *Bound `json:"physical_bound,omitempty"`
	Peer     *Peer  `json:"peer,omitempty"`
	Note     string `json:"note,omitempty"`
	Err      string `json:"error,omitempty"`
}

// Key identifies a workload across stores (backend excluded).
func (r Result) Key() string {
	return fmt.Sprintf("%s/%d/%d/%s", r.Group, r.Body, r.Producers, r.Flush)
}

// Name is the workload's name in the table.
func (r Result) Name() string {
	var b strings.Builder
	b.WriteString(r.Group)
	if r.Body > 0 {
		fmt.Fprintf(&b, " %s", SizeName(r.Body))
	}
	if r.Producers > 0 {
		fmt.Fprintf(&b, " ×%d", r.Producers)
	}
	if r.Flush != "" {
		fmt.Fprintf(&b, " %s", r.Flush)
	}
	return b.String()
}

func (r *Result) finish() {
	if r.Seconds > 0 {
		r.MsgsPerS = float64(r.Msgs) / r.Seconds
		r.MBPerS = float64(r.BodyBytes) / r.Seconds / 1e6
	}
}

// SizeName renders a body size: 128B, 1KiB, 4KiB.
func SizeName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// Report is the outcome of a run.
type Report struct {
	Machine string   `json:"machine"`
	Spec    Spec     `json:"spec"`
	Seconds float64  `json:"seconds"`
	Results []Result `json:"results"`
	// PeerStatus says whether the NATS figures are present, and if not why.
	PeerStatus string   `json:"peer_status,omitempty"`
	Peer       []Result `json:"peer_results,omitempty"`
}

// MergePeer records the peer's results and puts each beside the mmap
// result of the same workload (the headline backend).
func (rep *Report) MergePeer(peer []Result, status string) {
	rep.Peer, rep.PeerStatus = peer, status
	byKey := map[string]Result{}
	for _, p := range peer {
		if p.Err == "" && p.MsgsPerS > 0 {
			byKey[p.Key()] = p
		}
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		p, ok := byKey[r.Key()]
		if !ok || r.Backend != "mmap" {
			continue
		}
		r.Peer = &Peer{Name: "NATS JetStream", MsgsPerS: p.MsgsPerS, Ratio: r.MsgsPerS / p.MsgsPerS}
		if p.Latency != nil {
			v := p.Latency.P99
			r.Peer.P99 = &v
		}
	}
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteMarkdown writes the report as one Markdown table.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", rep.Machine)
	b.WriteString("| workload | backend | msgs/s | MB/s | latency µs p50 / p99 / p99.9 / max | bound | bound msgs/s | ÷ bound | NATS msgs/s | × NATS | notes |\n")
	b.WriteString("|---|---|--:|--:|--:|---|--:|--:|--:|--:|---|\n")
	rows := append([]Result(nil), rep.Results...)
	over := false       // a ratio above 100 % was printed
	alternated := false // a ratio of alternating pairs was printed
	for _, r := range rows {
		lat, bound, bmsgs, bratio, peer, pratio := "", "", "", "", "", ""
		if r.Latency != nil {
			lat = fmt.Sprintf("%s / %s / %s / %s", us(r.Latency.P50), us(r.Latency.P99), us(r.Latency.P999), us(r.Latency.Max))
		}
		if r.Bound != nil {
			bound = r.Bound.Name
			alternated = alternated || r.Bound.Pairs > 1
			if r.Bound.MsgsPerS > 0 {
				bmsgs = num(r.Bound.MsgsPerS)
				var o bool
				bratio, o = r.Bound.ratioCell()
				over = over || o
			}
		}
		if p := r.Physical; p != nil && p.MsgsPerS > 0 {
			bound += "; " + p.Name
			bmsgs += "; " + num(p.MsgsPerS)
			cell, o := p.ratioCell()
			bratio += "; " + cell
			over = over || o
		}
		if r.Peer != nil {
			peer = num(r.Peer.MsgsPerS)
			pratio = fmt.Sprintf("%.1f×", r.Peer.Ratio)
			if r.Peer.P99 != nil {
				peer += fmt.Sprintf(" (p99 %s µs)", us(*r.Peer.P99))
			}
		} else if r.Backend == "mmap" && peerWorkload(r.Group) && rep.PeerStatus != "" && len(rep.Peer) == 0 {
			peer = "n/a"
		}
		note := r.Note
		if r.Err != "" {
			note = "error: " + r.Err
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Name(), r.Backend, num(r.MsgsPerS), mb(r.MBPerS), lat, bound, bmsgs, bratio, peer, pratio, note)
	}
	if alternated {
		b.WriteString("\n÷ bound as min / median / max: the workload and its bound ran in alternation, and each pair gave a ratio.\n")
	}
	if over {
		b.WriteString("\n† over 100 % in every pair: the workload beat its bound, which then did not measure what bounds it " +
			"(or another process's load on the cores or the disk swamped every pair); report it.\n")
	}
	if rep.Spec.Quick {
		fmt.Fprintf(&b, "\n--quick is a smoke run: its runs last tens of milliseconds (sync puts: turns of %v), too short for "+
			"the ratios to be measurements; run without --quick for figures.\n", rep.Spec.SyncTime/syncSlices/syncSubSlices)
	}
	if rep.PeerStatus != "" {
		fmt.Fprintf(&b, "\nNATS JetStream peer: %s\n", rep.PeerStatus)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pct formats a ratio as a percentage with two significant digits at
// least, so that a small ratio does not print as "0 %".
func pct(r float64) string {
	switch p := 100 * r; {
	case p >= 10:
		return fmt.Sprintf("%.0f %%", p)
	case p >= 1:
		return fmt.Sprintf("%.1f %%", p)
	default:
		return fmt.Sprintf("%.2f %%", p)
	}
}

func peerWorkload(g string) bool { return g == GroupPut || g == GroupE2E || g == GroupCatchUp }

func num(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k", v/1e3)
	case v > 0:
		return fmt.Sprintf("%.1f", v)
	}
	return ""
}

func mb(v float64) string {
	if v <= 0 {
		return ""
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func us(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
