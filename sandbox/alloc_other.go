//go:build !unix

package sandbox

func mapMemory(uint64) []byte { return nil }

func unmapMemory([]byte) {}
