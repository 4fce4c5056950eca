package knowledge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// blockedPrefixes are the ranges never reached besides those netip classifies (loopback,
// private, link-local, multicast, unspecified): shared address space, IETF assignments,
// benchmarking, documentation, reserved and broadcast, and the IPv6 prefixes that embed an
// IPv4 address. It mirrors the sandbox's egress list; knowledge does not import sandbox.
var blockedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		"64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/32", "2001:db8::/32", "2002::/16",
		"3fff::/20", "5f00::/16", "::/96",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// addrClass says why an address may not be reached, in fetch_current_page's words (spec
// §4.3): "" when it may, else "private IP ranges", "loopback addresses", "link-local
// addresses" or "reserved IP ranges". IPv4-mapped IPv6 addresses are judged as the IPv4
// address they carry.
func addrClass(a netip.Addr, allowLoopback bool) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "reserved IP ranges"
	case a.IsLoopback():
		if allowLoopback {
			return ""
		}
		return "loopback addresses"
	case a.IsPrivate() || netip.MustParsePrefix("100.64.0.0/10").Contains(a):
		return "private IP ranges"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "link-local addresses"
	case a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast():
		return "reserved IP ranges"
	}
	// IPv6 outside 2000::/3 is not global unicast (fec0::/10, 4000::/3, ...): nothing
	// public is there, whatever the IANA registry assigns next.
	if a.Is6() && !globalUnicast6.Contains(a) {
		return "reserved IP ranges"
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return "reserved IP ranges"
		}
	}
	return ""
}

// globalUnicast6 is the only IPv6 block reached (less blockedPrefixes' parts of it).
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// errDestination is a connection the guard refused.
var errDestination = errors.New("destination not allowed")

// guard is the address check at connect time (spec §3.2 "SSRF guard"): every address a host
// resolves to must be public unicast, and the connection goes only to an address that was
// checked, verified again by the dialer's Control hook on the address actually dialled.
type guard struct {
	allowLoopback bool
	// resolve maps a host name to "IP:PORT" (the test hook, as curl --resolve): the host is
	// reached there, over plain HTTP, whatever the address.
	resolve map[string]string
	lookup  func(ctx context.Context, host string) ([]netip.Addr, error)
}

// newGuard returns a guard; a resolve entry whose address is not IP:PORT is an error.
func newGuard(allowLoopback bool, resolve map[string]string) (*guard, error) {
	g := &guard{allowLoopback: allowLoopback, resolve: map[string]string{}, lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}}
	for host, to := range resolve {
		ap, err := netip.ParseAddrPort(to)
		if err != nil {
			return nil, fmt.Errorf("knowledge: resolve %s=%s: want IP:PORT", host, to)
		}
		g.resolve[strings.ToLower(host)] = ap.String()
	}
	return g, nil
}

// resolved returns the test address of host, if it has one.
func (g *guard) resolved(host string) (string, bool) {
	a, ok := g.resolve[strings.ToLower(host)]
	return a, ok
}

// addresses resolves host and returns its addresses; an IP literal is itself.
func (g *guard) addresses(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	return g.lookup(ctx, host)
}

// check resolves host and returns its addresses if all of them may be reached, else the
// first refused one and its class.
func (g *guard) check(ctx context.Context, host string) ([]netip.Addr, netip.Addr, string, error) {
	addrs, err := g.addresses(ctx, host)
	if err != nil {
		return nil, netip.Addr{}, "", err
	}
	if len(addrs) == 0 {
		return nil, netip.Addr{}, "", fmt.Errorf("no address for %s", host)
	}
	for _, a := range addrs {
		if c := addrClass(a, g.allowLoopback); c != "" {
			return nil, a.Unmap(), c, nil
		}
	}
	return addrs, netip.Addr{}, "", nil
}

// dial is the transport's DialContext: a host given in resolve goes to its test address;
// any other is resolved, refused unless every address is allowed, and dialled only at a
// checked address, with the Control hook checking again what is dialled.
func (g *guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if to, ok := g.resolved(host); ok {
		d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
			if address != to {
				return errDestination
			}
			return nil
		}}
		return d.DialContext(ctx, network, to)
	}
	addrs, _, class, err := g.check(ctx, host)
	if err != nil {
		return nil, err
	}
	if class != "" {
		return nil, errDestination
	}
	d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || addrClass(ap.Addr(), g.allowLoopback) != "" {
			return errDestination
		}
		return nil
	}}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if errors.Is(err, errDestination) {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
