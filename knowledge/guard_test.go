package knowledge

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

func TestAddrClass(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"93.184.215.14", ""},
		{"2606:4700::1111", ""},
		{"127.0.0.1", "loopback addresses"},
		{"::1", "loopback addresses"},
		{"::ffff:127.0.0.1", "loopback addresses"},
		{"10.0.0.1", "private IP ranges"},
		{"172.16.5.4", "private IP ranges"},
		{"192.168.1.1", "private IP ranges"},
		{"::ffff:192.168.1.1", "private IP ranges"},
		{"100.64.0.1", "private IP ranges"},
		{"fd00::1", "private IP ranges"},
		{"169.254.169.254", "link-local addresses"},
		{"fe80::1", "link-local addresses"},
		{"0.0.0.0", "reserved IP ranges"},
		{"::", "reserved IP ranges"},
		{"224.0.0.1", "link-local addresses"}, // local network control block
		{"239.1.2.3", "reserved IP ranges"},
		{"ff02::1", "link-local addresses"},
		{"255.255.255.255", "reserved IP ranges"},
		{"240.0.0.1", "reserved IP ranges"},
		{"192.0.2.1", "reserved IP ranges"},
		{"2001:db8::1", "reserved IP ranges"},
		{"64:ff9b::a00:1", "reserved IP ranges"}, // NAT64 of 10.0.0.1
		{"2002:a00:1::", "reserved IP ranges"},   // 6to4 of 10.0.0.1
		{"::10.0.0.1", "reserved IP ranges"},     // IPv4-compatible
	}
	for _, tc := range tests {
		if got := addrClass(netip.MustParseAddr(tc.addr), false); got != tc.want {
			t.Errorf("addrClass(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := addrClass(netip.MustParseAddr("127.0.0.1"), true); got != "" {
		t.Errorf("loopback with AllowLoopback: %q", got)
	}
}

// TestNamesResolvingToPrivateAddresses: a host name whose addresses include a private one is
// refused before any connection, for documents and for the page fetch; a name that does not
// resolve gives the page fetch's DNS error.
func TestNamesResolvingToPrivateAddresses(t *testing.T) {
	// The allowed address is loopback (allowed here), so that even a broken guard would
	// connect only to this machine.
	l, err := New(Options{DataDir: t.TempDir(), AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "rebind.example.org":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.5")}, nil
		case "meta.example.org":
			return []netip.Addr{netip.MustParseAddr("::ffff:169.254.169.254")}, nil
		}
		return nil, errors.New("no such host")
	}
	l.docs.guard.lookup = lookup // the two fetchers share the guard
	for _, tc := range []struct{ url, want string }{
		{"https://rebind.example.org/", "Error: Access to private IP ranges is not allowed: 10.0.0.5"},
		{"https://meta.example.org/", "Error: Access to link-local addresses is not allowed: 169.254.169.254"},
		{"https://nowhere.example.org/", "Error: DNS resolution failed for nowhere.example.org: no such host"},
	} {
		if _, err := l.FetchPage(t.Context(), tc.url); err == nil || err.Error() != tc.want {
			t.Errorf("FetchPage(%s) = %v, want %q", tc.url, err, tc.want)
		}
	}
	for _, u := range []string{"https://rebind.example.org/doc", "https://meta.example.org/doc"} {
		if _, err := l.docs.fetch(t.Context(), u, "", ""); err == nil || err.Error() != "Request failed: destination not allowed" {
			t.Errorf("fetch(%s) = %v", u, err)
		}
	}
}
