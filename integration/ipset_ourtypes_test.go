package integration

import (
	"path/filepath"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// Set types this kernel's ipset lacks (the reference refuses them with
// "Kernel error received: set type not supported") are supported here on
// purpose; the corpus marks their lines "@ours". They are checked here
// against what ipset 7.17's userspace prints for them (formats from its
// type definitions: marks as 0x%08x, hash:mac without family).
func TestIpsetOursOnlyTypes(t *testing.T) {
	netns.RequireRoot(t)
	ours := filepath.Join(LinkDir(t), "ipset")
	ns := netns.New(t, "h7ipsT")
	for _, tc := range []struct {
		line, out, err string
		rc             int
	}{
		{"create mk hash:ip,mark", "", "", 0},
		{"add mk 198.51.100.1,0x10", "", "", 0},
		{"add mk 198.51.100.2,16", "", "", 0},
		{"add mk 198.51.100.1,16", "", "ipset v7.17: Element cannot be added to the set: it's already added\n", 1},
		{"add mk 198.51.100.3,0x100000000", "", "ipset v7.17: Syntax error: '0x100000000' is out of range 0-4294967295\n", 1},
		{"test mk 198.51.100.1,0x10", "", "Warning: 198.51.100.1,0x00000010 is in set mk.\n", 0},
		{"test mk 198.51.100.1,17", "", "198.51.100.1,0x00000011 is NOT in set mk.\n", 1},
		{"save mk", "create mk hash:ip,mark family inet markmask 0xffffffff hashsize 1024 maxelem 65536 bucketsize 12 initval X\nadd mk 198.51.100.1,0x00000010\nadd mk 198.51.100.2,0x00000010\n", "", 0},

		{"create npn hash:net,port,net", "", "", 0},
		{"add npn 198.51.100.0/24,tcp:80,203.0.113.0/25", "", "", 0},
		{"add npn 198.51.100.0/24,tcp:80,203.0.113.0/26 nomatch", "", "", 0},
		{"test npn 198.51.100.7,tcp:80,203.0.113.70", "", "Warning: 198.51.100.7,tcp:80,203.0.113.70 is in set npn.\n", 0},
		{"test npn 198.51.100.7,tcp:80,203.0.113.7", "", "198.51.100.7,tcp:80,203.0.113.7 is NOT in set npn.\n", 1},
		{"test npn 198.51.100.7,udp:80,203.0.113.70", "", "198.51.100.7,udp:80,203.0.113.70 is NOT in set npn.\n", 1},
		{"save npn", "create npn hash:net,port,net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval X\nadd npn 198.51.100.0/24,tcp:80,203.0.113.0/25\nadd npn 198.51.100.0/24,tcp:80,203.0.113.0/26 nomatch\n", "", 0},

		{"create nn hash:net,net", "", "", 0},
		{"add nn 198.51.100.0/24,203.0.113.0/24", "", "", 0},
		{"add nn 198.51.100.0/25,203.0.113.0/24 nomatch", "", "", 0},
		{"test nn 198.51.100.1,203.0.113.1", "", "198.51.100.1,203.0.113.1 is NOT in set nn.\n", 1},
		{"test nn 198.51.100.200,203.0.113.1", "", "Warning: 198.51.100.200,203.0.113.1 is in set nn.\n", 0},

		{"create m hash:mac", "", "", 0},
		{"create m2 hash:mac family inet", "", "ipset v7.17: Unknown argument: `family'\nTry `ipset help' for more information.\n", 2},
		{"add m 00:11:22:33:44:55", "", "", 0},
		{"add m 0a:00:00:00:00:01", "", "", 0},
		{"add m 00:11:22:33:44:55", "", "ipset v7.17: Element cannot be added to the set: it's already added\n", 1},
		{"test m 00:11:22:33:44:55", "", "Warning: 00:11:22:33:44:55 is in set m.\n", 0},
		{"test m 00:11:22:33:44:56", "", "00:11:22:33:44:56 is NOT in set m.\n", 1},
		{"del m 00:11:22:33:44:55", "", "", 0},
		{"save m", "create m hash:mac hashsize 1024 maxelem 65536 bucketsize 12 initval X\nadd m 0A:00:00:00:00:01\n", "", 0},

		{"create im hash:ip,mac", "", "", 0},
		{"add im 198.51.100.1,00:11:22:33:44:55", "", "", 0},
		{"add im 198.51.100.1", "", "ipset v7.17: Syntax error: Second element is missing from 198.51.100.1.\n", 1},
		{"save im", "create im hash:ip,mac family inet hashsize 1024 maxelem 65536 bucketsize 12 initval X\nadd im 198.51.100.1,00:11:22:33:44:55\n", "", 0},
		{"-n list", "mk\nnpn\nnn\nm\nim\n", "", 0},
		// the old names of these types, which ipset 7.17 takes too
		{"create a1 machash", "", "", 0},
		{"create a2 netnethash", "", "", 0},
		{"create a3 netportnethash", "", "", 0},
		{"create a4 ipmarkhash", "", "", 0},
		{"save a1", "create a1 hash:mac hashsize 1024 maxelem 65536 bucketsize 12 initval X\n", "", 0},
		{"save a2", "create a2 hash:net,net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval X\n", "", 0},
		{"save a3", "create a3 hash:net,port,net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval X\n", "", 0},
		{"save a4", "create a4 hash:ip,mark family inet markmask 0xffffffff hashsize 1024 maxelem 65536 bucketsize 12 initval X\n", "", 0},
		// markmask: listed always (the kernel reports it), marks ANDed
		// with it by the kernel (echoed as written)
		{"create mm hash:ip,mark markmask 0x0000FFDE timeout 5", "", "", 0},
		{"add mm 198.51.100.1,0x123", "", "", 0},
		{"add mm 198.51.100.1,0x103", "", "ipset v7.17: Element cannot be added to the set: it's already added\n", 1},
		{"test mm 198.51.100.1,0x10103", "", "Warning: 198.51.100.1,0x00010103 is in set mm.\n", 0},
		{"save mm", "create mm hash:ip,mark family inet markmask 0x0000ffde hashsize 1024 maxelem 65536 timeout 5 bucketsize 12 initval X\nadd mm 198.51.100.1,0x00000102 timeout T\n", "", 0},
		{"create -exist mm hash:ip,mark markmask 0xffde timeout 5", "", "", 0},
		{"create -exist mm hash:ip,mark timeout 5", "", "ipset v7.17: Set cannot be created: set with the same name already exists\n", 1},
		{"create m0 hash:ip,mark markmask 0", "", "ipset v7.17: The value of the markmask parameter is invalid\n", 1},
		{"create m1 hash:ip,mark markmask 1 markmask 2", "", "ipset v7.17: Syntax error: markmask already specified\n", 1},
		{"create m2 hash:ip markmask 1", "", "ipset v7.17: Unknown argument: `markmask'\nTry `ipset help' for more information.\n", 2},
		// ipset 4's options, ignored as on hash:ip,port
		// entries whose second prefixes nest: ipset decides by the most
		// specific first prefix, then the most specific second
		{"create nn2 hash:net,net", "", "", 0},
		{"add nn2 10.0.0.0/8,10.0.0.0/8", "", "", 0},
		{"add nn2 10.0.0.0/8,10.1.0.0/16", "", "", 0},
		{"add nn2 10.1.0.0/16,10.0.0.0/8 nomatch", "", "", 0},
		{"add nn2 10.1.2.0/24,10.1.0.0/16", "", "", 0},
		{"test nn2 10.5.0.1,10.2.0.1", "", "Warning: 10.5.0.1,10.2.0.1 is in set nn2.\n", 0},
		{"test nn2 10.1.0.1,10.1.0.1", "", "10.1.0.1,10.1.0.1 is NOT in set nn2.\n", 1},
		{"test nn2 10.1.2.3,10.1.0.1", "", "Warning: 10.1.2.3,10.1.0.1 is in set nn2.\n", 0},
		{"test nn2 10.1.2.3,10.2.0.1", "", "10.1.2.3,10.2.0.1 is NOT in set nn2.\n", 1},
		{"create npn2 hash:net,port,net", "", "", 0},
		{"add npn2 198.51.100.0/24,tcp:5,203.0.113.0/24", "", "", 0},
		{"add npn2 198.51.100.0/24,tcp:5,203.0.113.0/25", "", "", 0},
		{"add npn2 198.51.100.7,tcp:5,203.0.113.0/26 nomatch", "", "", 0},
		{"test npn2 198.51.100.7,tcp:5,203.0.113.1", "", "198.51.100.7,tcp:5,203.0.113.1 is NOT in set npn2.\n", 1},
		{"test npn2 198.51.100.7,tcp:5,203.0.113.200", "", "Warning: 198.51.100.7,tcp:5,203.0.113.200 is in set npn2.\n", 0},
		// the zero MAC is no element, as the zero address of a hash:ip
		{"add m 00:00:00:00:00:00", "", "ipset v7.17: Null-valued element, cannot be stored in a hash type of set\n", 1},
		{"test m 0:0:0:0:0:0", "", "00:00:00:00:00:00 is NOT in set m.\n", 1},
		{"-N m3 ipmarkhash --from 198.51.100.1 --to 198.51.100.9", "", "Warning: Option '--from 198.51.100.1' is ignored. Please upgrade your syntax.\nOption '--to 198.51.100.9' is ignored. Please upgrade your syntax.\n", 0},
	} {
		r := ns.Run("", append([]string{ours}, shellWords(tc.line)...)...)
		if normIpsetOutput(r.Stdout) != normIpsetOutput(tc.out) || r.Stderr != tc.err || r.RC != tc.rc {
			t.Errorf("ipset %s:\n got rc=%d %q %q\nwant rc=%d %q %q", tc.line, r.RC, r.Stdout, r.Stderr, tc.rc, tc.out, tc.err)
		}
	}
}
