package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/rocketstore/rocketstore/bench"
)

// serverKey groups the server-load results of one configuration (the
// repeats of one system and shape).
type serverKey struct {
	system, shape       string
	body, conns, window int
	flush               string
	consumers           bool
}

// loadKey is a configuration's load without the system: what gRPC and
// remoting results are compared on.
type loadKey struct {
	body, conns, window int
	flush               string
	consumers           bool
}

// spread is the min, median and max of a figure over repeats.
type spread struct{ min, med, max float64 }

func spreadOf(v []float64) spread {
	v = slices.Clone(v)
	slices.Sort(v)
	return spread{v[0], v[len(v)/2], v[len(v)-1]}
}

func (s spread) String(format string) string {
	return fmt.Sprintf(format+" / "+format+" / "+format, s.min, s.med, s.max)
}

// writeServerSummary prints, for each configuration, min/median/max of
// msgs/s and server CPU µs/msg over the repeats that succeeded, then
// rocketstore's gRPC figures over its remoting ones on the same load
// (the range of the per-repeat ratios: repeat i of gRPC ran right after
// repeat i of remoting), and the gRPC echo bound's over remoting's.
func writeServerSummary(w io.Writer, rs []bench.ServerResult) {
	var keys []serverKey
	rates, cpus := map[serverKey][]float64{}, map[serverKey][]float64{}
	for _, r := range rs {
		if r.Err != "" || r.Acked == 0 {
			continue
		}
		k := serverKey{r.System, r.Shape, r.Body, r.Conns, r.Window, r.Flush, r.Consumers}
		if _, ok := rates[k]; !ok {
			keys = append(keys, k)
		}
		rates[k] = append(rates[k], r.MsgsPerS)
		cpus[k] = append(cpus[k], r.CPUPerMsg)
	}
	fmt.Fprintln(w, "\n| system | shape | body | flush | conns × window | consumers | runs | msgs/s min / median / max | server CPU µs/msg min / median / max |")
	fmt.Fprintln(w, "|---|---|--:|---|---|---|--:|---|---|")
	for _, k := range keys {
		fmt.Fprintf(w, "| %s | %s | %d B | %s | %d × %d | %v | %d | %s | %s |\n", k.system, k.shape, k.body, k.flush,
			k.conns, k.window, k.consumers, len(rates[k]), spreadOf(rates[k]).String("%.0f"), spreadOf(cpus[k]).String("%.2f"))
	}
	// Per-repeat ratios: the i-th gRPC result of a load over the i-th
	// remoting one.
	var loads []loadKey
	grpcRate, remRate := map[loadKey][]float64{}, map[loadKey][]float64{}
	grpcCPU, remCPU := map[loadKey][]float64{}, map[loadKey][]float64{}
	echoRate, echoCPU := map[loadKey][]float64{}, map[loadKey][]float64{}
	for _, k := range keys {
		l := loadKey{k.body, k.conns, k.window, k.flush, k.consumers}
		switch k.system {
		case systemGRPC:
			if _, ok := grpcRate[l]; !ok {
				loads = append(loads, l)
			}
			grpcRate[l], grpcCPU[l] = rates[k], cpus[k]
		case "rocketstore":
			remRate[l], remCPU[l] = rates[k], cpus[k]
		case systemGRPCEcho:
			echoRate[l], echoCPU[l] = rates[k], cpus[k]
		}
	}
	if len(loads) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| body | flush | conns × window | consumers | gRPC/remoting msgs/s min / median / max | gRPC/remoting server CPU µs/msg min / median / max | echo bound/remoting msgs/s | echo bound/remoting server CPU µs/msg |")
	fmt.Fprintln(w, "|--:|---|---|---|---|---|---|---|")
	for _, l := range loads {
		n := min(len(grpcRate[l]), len(remRate[l]))
		if n == 0 {
			continue
		}
		rr, cr := ratios(grpcRate[l][:n], remRate[l][:n]), ratios(grpcCPU[l][:n], remCPU[l][:n])
		// The echo bound runs sends only, also for a load with consumers.
		e := l
		e.consumers = false
		er, ec := "–", "–"
		if m := min(len(echoRate[e]), n); m > 0 {
			er = spreadOf(ratios(echoRate[e][:m], remRate[l][:m])).String("%.2f")
			ec = spreadOf(ratios(echoCPU[e][:m], remCPU[l][:m])).String("%.2f")
		}
		fmt.Fprintf(w, "| %d B | %s | %d × %d | %v | %s | %s | %s | %s |\n", l.body, l.flush, l.conns, l.window, l.consumers,
			spreadOf(rr).String("%.2f"), spreadOf(cr).String("%.2f"), er, ec)
	}
}

// ratios divides a[i] by b[i]: repeat i of one system over repeat i of
// the other (they ran one after the other).
func ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / b[i]
	}
	return out
}
