package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/engine"
)

// Options configure Run.
type Options struct {
	Spec Spec
	// Dir is the parent of the temporary stores ("" = os.TempDir()).
	Dir string
	// Backends to measure: Mmap, Memfs (default both).
	Backends []string
	// Progress, if set, is called before each step and once at the end
	// (done == total).
	Progress func(done, total int, step string)
}

// step is one unit of a run.
type step struct {
	name string
	run  func(ctx context.Context) ([]Result, error)
	// stub describes the result when run fails.
	stub Result
}

// Run runs the suite and returns its report. A failing workload is
// reported in its row; Run fails only when ctx is done.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if len(opts.Backends) == 0 {
		opts.Backends = []string{Mmap, Memfs}
	}
	e := env{spec: opts.Spec, dir: opts.Dir}
	steps := e.steps(opts.Backends)
	rep := &Report{Machine: Machine(), Spec: opts.Spec}
	start := time.Now()
	for i, st := range steps {
		if opts.Progress != nil {
			opts.Progress(i, len(steps), st.name)
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rs, err := st.run(ctx)
		if err != nil {
			r := st.stub
			r.Err = err.Error()
			rs = append(rs, r)
		}
		rep.Results = append(rep.Results, rs...)
	}
	if opts.Progress != nil {
		opts.Progress(len(steps), len(steps), "done")
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

func (e env) steps(backends []string) []step {
	sp := e.spec
	var steps []step
	for _, be := range backends {
		for _, flush := range []engine.FlushDiskType{engine.AsyncFlush, engine.SyncFlush} {
			if flush == engine.SyncFlush && be == Memfs {
				// memfs has no disk: a sync-flush figure would measure
				// afero, not a bound we could name.
				continue
			}
			for _, body := range sp.BodySizes {
				for _, p := range sp.Producers {
					be, flush, body, p := be, flush, body, p
					stub := Result{Group: GroupPut, Backend: be, Body: body, Producers: p, Flush: FlushName(flush)}
					steps = append(steps, step{name: stub.Name() + " " + be, stub: stub, run: func(ctx context.Context) ([]Result, error) {
						if flush == engine.SyncFlush && be == Mmap {
							r, err := e.syncPut(ctx, body, p, sp.PutCount(body))
							return []Result{r}, err
						}
						r, err := e.putPairs(ctx, be, body, p, flush)
						return []Result{r}, err
					}})
				}
			}
		}
		for _, body := range sp.BodySizes {
			be, body := be, body
			stub := Result{Group: GroupE2E, Backend: be, Body: body, Producers: 1}
			steps = append(steps, step{name: stub.Name() + " " + be, stub: stub, run: func(ctx context.Context) ([]Result, error) {
				r, err := e.e2e(ctx, be, body, sp.E2EMsgs, sp.LatencyRate, sp.LatencyTime)
				return []Result{r}, err
			}})
		}
		be := be
		lagStub := Result{Group: GroupLag, Backend: be, Body: 1024}
		steps = append(steps, step{name: "dispatch lag " + be, stub: lagStub, run: func(ctx context.Context) ([]Result, error) {
			r, err := e.lag(ctx, be, 1024, sp.LagSamples)
			return []Result{r}, err
		}})
		name := "catch-up read"
		if be == Mmap {
			name += " + recovery"
		}
		steps = append(steps, step{name: name + " " + be, stub: Result{Group: GroupCatchUp, Backend: be, Body: sp.BacklogBody},
			run: func(ctx context.Context) ([]Result, error) { return e.backlog(ctx, be) }})
	}
	return steps
}

// putPairs runs an async put and its bound (putBound) in alternation,
// Spec.Pairs times, and returns the median put run with the bound's
// median and the min / median / max of the pairs' ratios. A bound measured
// once, before or after, compared the workload with a machine whose page
// cache and cores were in another state (a 1 KiB put at 144 % of a copy
// measured once after the 128 B runs).
func (e env) putPairs(ctx context.Context, be string, body, producers int, flush engine.FlushDiskType) (Result, error) {
	sp := e.spec
	var runs []putRun
	var bounds, refs []Bound
	var ratios []float64
	boundErr := ""
	for range max(sp.Pairs, 1) {
		r, err := e.put(ctx, be, body, producers, flush, sp.PutCount(body), sp.PutTime)
		if err != nil {
			return r.Result, err
		}
		runs = append(runs, r)
		b, ref, err := e.putBound(&r)
		if err != nil {
			boundErr = "bound: " + err.Error()
			continue
		}
		if b == nil {
			continue
		}
		bounds = append(bounds, *b)
		if ref != nil {
			refs = append(refs, *ref)
		}
		ratios = append(ratios, r.MsgsPerS/b.MsgsPerS)
	}
	med := medianBy(runs, func(r putRun) float64 { return r.MsgsPerS })
	res := med.Result
	if len(runs) > 1 {
		rates := make([]float64, len(runs))
		for i, r := range runs {
			rates[i] = r.MsgsPerS
		}
		s := spreadOf(rates)
		res.Note = fmt.Sprintf("%d runs: msgs/s min/median/max %s/%s/%s", len(runs), num(s.min), num(s.med), num(s.max))
	}
	if len(bounds) > 0 {
		b := medianBy(bounds, func(b Bound) float64 { return b.MsgsPerS })
		b.setRatios(ratios)
		res.Bound = &b
		if len(refs) > 0 {
			ref := medianBy(refs, func(b Bound) float64 { return b.MsgsPerS })
			res.Note = strings.TrimSuffix(fmt.Sprintf("reference, not a bound: %s %s msgs/s, the store at %.2f× it (it prefaults ahead on another goroutine); %s",
				ref.Name, num(ref.MsgsPerS), res.MsgsPerS/ref.MsgsPerS, res.Note), "; ")
		}
	}
	if boundErr != "" {
		res.Note = strings.TrimSuffix(boundErr+"; "+res.Note, "; ")
	}
	return res, nil
}

// medianBy returns the element of v whose key is the median (the upper
// one of an even count).
func medianBy[T any](v []T, key func(T) float64) T {
	s := slices.Clone(v)
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[len(s)/2]
}

// putBound measures the bound of an async put run, just after it: memcpy
// of the same records, best of three. (A sync run measures its bound
// itself, in slices alternating with its own: syncPut.) On mmap the bound
// is the copy into a write-prefaulted mapping; the copy into a fresh
// mapped file, which takes every page fault inside the copy, is only a
// reference (ref): the store prefaults its mapping ahead of the writer on
// another goroutine, so with a core to spare it is faster than that copy,
// and a "bound" below the workload is no bound.
func (e env) putBound(r *putRun) (b, ref *Bound, err error) {
	if r.Msgs == 0 || r.recSize == 0 || r.Flush != "async" {
		return nil, nil, nil
	}
	best, err := e.bestMemcpy(r, r.Backend == Mmap)
	if err != nil {
		return nil, nil, err
	}
	if r.Backend != Mmap {
		return &best, nil, nil
	}
	fresh, err := e.bestMemcpy(r, false)
	if err != nil {
		return nil, nil, err
	}
	return &best, &fresh, nil
}

// bestMemcpy is the best of three memcpy bounds for r's records: a bound is
// the fastest the machine did.
func (e env) bestMemcpy(r *putRun, prefaulted bool) (Bound, error) {
	var best Bound
	for range 3 {
		mb, err := e.memcpyBound(r.Backend, r.recSize, int(r.Msgs), prefaulted)
		if err != nil {
			return Bound{}, err
		}
		if mb.MsgsPerS > best.MsgsPerS {
			best = mb
		}
	}
	return best, nil
}

// Machine describes this machine for the report.
func Machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					model = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs (%s), %s, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model,
		runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}
