package knowledge

import (
	"net/netip"
	"testing"
)

// TestAddrClassIPv6: only global unicast (2000::/3) is reached, less the blocks refused
// inside it; every other IPv6 block is reserved, site-local and the unassigned ones too.
func TestAddrClassIPv6(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"2606:4700::1111", ""},
		{"2a00:1450:4001:80b::200e", ""},
		{"2001:4860:4860::8888", ""},
		{"3ffe::1", ""},                                                   // the old 6bone block, global unicast since its return
		{"fec0::1", "reserved IP ranges"},                                 // site-local (deprecated)
		{"feff:ffff::1", "reserved IP ranges"},                            // fec0::/10, its top
		{"4000::1", "reserved IP ranges"},                                 // unassigned
		{"8000::1", "reserved IP ranges"},                                 // unassigned
		{"e000::1", "reserved IP ranges"},                                 // unassigned
		{"1::1", "reserved IP ranges"},                                    // unassigned (0000::/8 outside ::/96)
		{"200::1", "reserved IP ranges"},                                  // 0200::/7, once NSAP
		{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved IP ranges"}, // just below 2000::/3
		{"4000::", "reserved IP ranges"},                                  // just above it
		{"100::1", "reserved IP ranges"},                                  // discard-only, inside 0000::/8
		{"2001:db8::1", "reserved IP ranges"},                             // documentation, inside 2000::/3
		{"2002:a00:1::", "reserved IP ranges"},                            // 6to4, inside 2000::/3
		{"3fff::1", "reserved IP ranges"},                                 // documentation, inside 2000::/3
		{"fd00::1", "private IP ranges"},                                  // unique-local keeps its class
		{"fe80::1", "link-local addresses"},
		{"ff0e::1", "reserved IP ranges"},
		{"::1", "loopback addresses"},
		{"::", "reserved IP ranges"},
		{"::ffff:93.184.215.14", ""}, // IPv4-mapped: judged as the IPv4 address
	}
	for _, tc := range tests {
		if got := addrClass(netip.MustParseAddr(tc.addr), false); got != tc.want {
			t.Errorf("addrClass(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
