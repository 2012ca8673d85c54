package proxy

// InFlight is the number of requests and receive streams being handled.
func (p *Proxy) InFlight() int64 { return p.inFlight.Load() }
