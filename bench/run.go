package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
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
		// memcpy bounds per body size, measured once: memcpy[body] pays
		// first-touch faults, memcpy[-body] copies into a write-prefaulted
		// mapping.
		memcpy := map[int]*Bound{}
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
						r, err := e.put(ctx, be, body, p, flush, sp.PutCount(body), sp.PutTime)
						if err != nil {
							return nil, err
						}
						b, err := e.putBound(&r, memcpy)
						if err != nil {
							r.Note = "bound: " + err.Error()
						} else if b != nil {
							r.Bound = b
						}
						return []Result{r.Result}, nil
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

// putBound measures the bound of an async put run: memcpy of the same
// records. (A sync run measures its bound itself, in slices alternating
// with its own: syncPut.) On mmap the bound is the copy into a
// write-prefaulted mapping; the copy into a fresh mapped file, which
// takes every page fault inside the copy, is only a reference (in the
// note): the store prefaults its mapping ahead of the writer on another
// goroutine, so with a core to spare it is faster than that copy, and a
// "bound" below the workload is no bound.
func (e env) putBound(r *putRun, memcpy map[int]*Bound) (*Bound, error) {
	if r.Msgs == 0 || r.recSize == 0 || r.Flush != "async" {
		return nil, nil
	}
	if memcpy[r.Body] == nil {
		best, err := e.bestMemcpy(r, false)
		if err != nil {
			return nil, err
		}
		memcpy[r.Body] = &best
		if r.Backend == Mmap {
			phys, err := e.bestMemcpy(r, true)
			if err != nil {
				return nil, err
			}
			memcpy[-r.Body] = &phys
		}
	}
	b := *memcpy[r.Body]
	if p := memcpy[-r.Body]; p != nil {
		r.Note = fmt.Sprintf("reference: %s %s msgs/s (%s)", b.Name, num(b.MsgsPerS), pct(r.MsgsPerS/b.MsgsPerS))
		b = *p
	}
	b.Ratio = r.MsgsPerS / b.MsgsPerS
	return &b, nil
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
