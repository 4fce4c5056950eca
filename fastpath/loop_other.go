//go:build !linux

package fastpath

import "net"

// worker is an event loop; there are none off Linux, where every connection goes to HTTP.
type worker struct{}

func startWorkers(*Server) []*worker { return nil }

func (s *Server) adopt(net.Conn) bool { return false }

func (s *Server) wakeWorkers() {}
