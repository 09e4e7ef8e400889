package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/batonhq/baton"
)

// These tests only call decision functions: nothing here opens a socket.

func TestCheckIP(t *testing.T) {
	strict, _ := newTestPolicy(t, "", nil)
	tests := []struct {
		addr   string
		reason string // substring of the refusal; "" means allowed
	}{
		// allowed: public
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of a public address
		{"2002:808:808::1", ""},  // 6to4 of a public address
		{"100.63.255.255", ""},   // just below CGNAT
		{"100.128.0.0", ""},      // just above CGNAT
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"198.17.255.255", ""},
		{"198.20.0.0", ""},
		{"223.255.255.255", ""},

		// loopback
		{"127.0.0.1", "127.0.0.1 is loopback"},
		{"127.0.0.2", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "::1 is loopback"},
		// private
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "unique local"},
		{"fd12:3456::1", "unique local"},
		// link-local and metadata
		{"169.254.169.254", "169.254.169.254 is link-local (cloud metadata)"},
		{"169.254.170.2", "link-local (container metadata)"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf::1", "link-local"},
		{"fd00:ec2::254", "cloud metadata"},
		{"100.100.100.200", "cloud metadata"},
		{"192.0.0.192", "cloud metadata"},
		// CGNAT
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		// multicast
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"ff05::2", "multicast"},
		// unspecified, 0/8, broadcast, reserved
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this network"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"254.1.2.3", "reserved"},
		// benchmark and documentation
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.1", "documentation"},
		{"203.0.113.1", "documentation"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		// other special IPv4
		{"192.0.0.8", "IETF protocol assignment"},
		{"192.88.99.1", "6to4 relay"},
		// IPv4-mapped IPv6: judged as the IPv4
		{"::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1) is loopback"},
		{"::ffff:7f00:1", "loopback"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:0.0.0.0", "unspecified"},
		// IPv4-compatible (deprecated) and SIIT
		{"::127.0.0.1", "IPv4-compatible"},
		{"::10.0.0.1", "IPv4-compatible"},
		{"::8.8.8.8", "IPv4-compatible"},
		{"::ffff:0:a00:1", "IPv4-translated"},
		// 6to4 embedding a refused IPv4
		{"2002:7f00:1::", "6to4 form of 127.0.0.1, which is loopback"},
		{"2002:a00:1::1", "6to4 form of 10.0.0.1, which is private"},
		{"2002:a9fe:a9fe::", "6to4 form of 169.254.169.254, which is link-local (cloud metadata)"},
		// NAT64 embedding a refused IPv4
		{"64:ff9b::7f00:1", "NAT64 form of 127.0.0.1, which is loopback"},
		{"64:ff9b::10.0.0.1", "NAT64 form of 10.0.0.1"},
		{"64:ff9b::a9fe:a9fe", "cloud metadata"},
		{"64:ff9b::c0a8:101", "private"},
		{"64:ff9b:1::a00:1", "local-use NAT64"},
		// Teredo and the rest of 2001::/23
		{"2001::1", "Teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"2001:2::1", "IETF protocol assignment"},
		// other IPv6 specials
		{"100::1", "discard-only"},
		{"fec0::1", "site-local"},
		{"5f00::1", "SRv6"},
		{"4000::1", "not global unicast"},
		{"e000::1", "not global unicast"},
		{"::2", "IPv4-compatible"},
		{"1::", "not global unicast"},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			err := strict.CheckIP(netip.MustParseAddr(tc.addr))
			checkDecision(t, err, tc.reason)
		})
	}

	t.Run("invalid", func(t *testing.T) {
		if !errors.Is(strict.CheckIP(netip.Addr{}), ErrRefused) {
			t.Fatal("zero Addr must be refused")
		}
	})
}

func checkDecision(t *testing.T, err error, reason string) {
	t.Helper()
	if reason == "" {
		if err != nil {
			t.Fatalf("refused, want allowed: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("allowed, want refused (%s)", reason)
	}
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("error %v does not match ErrRefused", err)
	}
	var r *Refused
	if !errors.As(err, &r) {
		t.Fatalf("error %T is not *Refused", err)
	}
	if !strings.Contains(r.Reason, reason) {
		t.Fatalf("reason %q, want it to contain %q", r.Reason, reason)
	}
}

func TestCheckIPAllowList(t *testing.T) {
	p, _ := newTestPolicy(t, "127.0.0.2/32, 10.0.0.0/8 ,fd00::/8,::ffff:192.168.7.0/120,169.254.169.254", nil)
	tests := []struct {
		addr    string
		allowed bool
	}{
		{"127.0.0.2", true},
		{"::ffff:127.0.0.2", true}, // after unmapping
		{"127.0.0.1", false},
		{"127.0.0.3", false},
		{"10.1.2.3", true},
		{"64:ff9b::a01:203", true},   // NAT64 of an allowed IPv4
		{"2002:a01:203::", true},     // 6to4 of an allowed IPv4
		{"64:ff9b::c0a8:101", false}, // NAT64 of a refused IPv4
		{"fd00::1", true},
		{"fc00::1", false},
		{"192.168.7.9", true}, // mapped prefix converted to IPv4
		{"192.168.8.1", false},
		{"169.254.169.254", true},
		{"169.254.169.253", false},
		{"0.0.0.0", false}, // never, whatever the allow-list
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			err := p.CheckIP(netip.MustParseAddr(tc.addr))
			if (err == nil) != tc.allowed {
				t.Fatalf("CheckIP(%s) = %v, want allowed=%v", tc.addr, err, tc.allowed)
			}
		})
	}
	t.Run("everything", func(t *testing.T) {
		all, _ := newTestPolicy(t, "0.0.0.0/0,::/0", nil)
		if err := all.CheckIP(netip.MustParseAddr("::")); err == nil {
			t.Fatal(":: allowed")
		}
		if err := all.CheckIP(netip.MustParseAddr("10.0.0.1")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestParseAllowList(t *testing.T) {
	tests := []struct {
		in      string
		want    string // prefixes joined by ","; ignored when wantErr
		wantErr bool
	}{
		{"", "", false},
		{" , ", "", false},
		{"10.0.0.0/8", "10.0.0.0/8", false},
		{"10.1.2.3/8", "10.0.0.0/8", false}, // masked
		{"127.0.0.2", "127.0.0.2/32", false},
		{"::1", "::1/128", false},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", false},
		{"fd00::/8,192.168.0.0/16", "fd00::/8,192.168.0.0/16", false},
		{"10.0.0.0/33", "", true},
		{"nonsense", "", true},
		{"fe80::/10%eth0", "", true},
		{"::ffff:0:0/90", "", true},
		{"10.0.0.0/8,,x", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAllowList(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %v, want error", got)
				}
				if !strings.Contains(err.Error(), "--egress-allow") {
					t.Fatalf("error %q does not name the flag", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if j := strings.Join(s, ","); j != tc.want {
				t.Fatalf("got %q, want %q", j, tc.want)
			}
		})
	}
}

func TestNewPolicyValidates(t *testing.T) {
	if _, err := NewPolicy(Config{Allow: []netip.Prefix{{}}}); err == nil {
		t.Fatal("zero prefix accepted")
	}
	if _, err := NewPolicy(Config{DialTimeout: -1}); err == nil {
		t.Fatal("negative timeout accepted")
	}
}

func TestRefusedAsBatonError(t *testing.T) {
	p, _ := newTestPolicy(t, "", nil)
	err := p.CheckIP(netip.MustParseAddr("169.254.169.254"))
	if got := baton.ErrorCode(err); got != baton.EForbidden {
		t.Fatalf("ErrorCode = %q, want %q", got, baton.EForbidden)
	}
	if msg := baton.ErrorMessage(err); !strings.Contains(msg, "cloud metadata") {
		t.Fatalf("message %q", msg)
	}
	// A refusal of a resolved name does not disclose the address.
	r := &Refused{Target: "db.example:80", Addr: netip.MustParseAddr("10.1.2.3"), Reason: "10.1.2.3 is private", kind: "private", resolved: true}
	if msg := baton.ErrorMessage(r); strings.Contains(msg, "10.1.2.3") || !strings.Contains(msg, "db.example") {
		t.Fatalf("client message %q", msg)
	}
	if !strings.Contains(r.Error(), "10.1.2.3") {
		t.Fatalf("log message %q lacks the address", r.Error())
	}
	_, err = p.CheckURL("http://[::1")
	if baton.ErrorCode(err) != baton.EInvalid || !errors.Is(err, ErrInvalidURL) || errors.Is(err, ErrRefused) {
		t.Fatalf("invalid URL error %v: code %q", err, baton.ErrorCode(err))
	}
}
