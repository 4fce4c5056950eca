//go:build !linux

package fastpath

// Sealed is a large body kept in a sealed memory file, sent with sendfile(2); only on Linux.
type Sealed struct{}

// MinSealed is the smallest body worth a memory file.
const MinSealed = 64 << 10

// Seal returns nil off Linux: bodies are sent from memory.
func Seal([]byte) *Sealed { return nil }
