package server

import "github.com/rocketstore/rocketstore/acl"

// ACLValidator returns the server's ACL validator, or nil when ACL is off
// (the web console then requires an admin account of it).
func (s *Server) ACLValidator() *acl.Validator {
	if s.sec == nil {
		return nil
	}
	return s.sec.acl
}
