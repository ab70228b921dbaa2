package mcpfront

// PeerLookups is how many times the front end asked the cluster registry
// where a session's owner is.
func (s *Server) PeerLookups() int64 { return s.fwd.lookups.Load() }
