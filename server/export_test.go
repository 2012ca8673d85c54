package server

// SampleStats takes one statistics sample now (the sampler's tick).
func SampleStats(s *Server) { s.admin.Sample() }

// Housekeep runs one housekeeping scan now (the scan ticker's tick), so
// that a test which moved the clock sees what expired.
func Housekeep(s *Server) { s.scan() }
