package server

// SampleStats takes one statistics sample now (the sampler's tick).
func SampleStats(s *Server) { s.admin.Sample() }
