package ipset

// Dim is the kind of one dimension of a set's elements.
type Dim uint8

// Element dimensions.
const (
	DimIP    Dim = iota + 1 // a single address
	DimNet                  // an address with a prefix length
	DimPort                 // protocol and port (icmp type/code)
	DimIface                // interface name, optionally physdev:
	DimMAC                  // ethernet address
	DimMark                 // packet mark
	DimSet                  // a set name (list:set)
)

// Type describes one ipset set type.
type Type struct {
	Name     string
	Revision int
	Dims     []Dim
	Bitmap   bool // bitmap:* (range option, no family)
	List     bool // list:set
	// OptionalMAC: bitmap:ip,mac accepts elements without the MAC.
	OptionalMAC bool
	// Neutral: a hash type without family (hash:mac).
	Neutral bool
}

// Net reports whether elements carry prefix lengths (and may be nomatch).
func (t *Type) Net() bool {
	for _, d := range t.Dims {
		if d == DimNet {
			return true
		}
	}
	return false
}

// IfaceShared reports whether the entries of all interfaces compete for
// an address (hash:net,iface): ipset looks for the most specific network
// holding the address among the entries of every interface, and only the
// entries of that network can match; another interface's entry there
// hides a less specific one of the packet's interface.
func (t *Type) IfaceShared() bool {
	for _, d := range t.Dims {
		if d == DimIface {
			return t.Net()
		}
	}
	return false
}

// SameFeatures reports whether the kernel takes t and u for one type in
// a swap: it compares what the types' elements hold (an ip and a net
// dimension are both addresses) and whether they have nomatch, not
// the types themselves, so a hash:ip swaps with a bitmap:ip.
func (t *Type) SameFeatures(u *Type) bool {
	if t.Net() != u.Net() || len(t.Dims) != len(u.Dims) {
		return false
	}
	addr := func(d Dim) Dim {
		if d == DimNet {
			return DimIP
		}
		return d
	}
	for i, d := range t.Dims {
		if addr(d) != addr(u.Dims[i]) {
			return false
		}
	}
	return true
}

var types = []*Type{
	{Name: "hash:ip", Revision: 6, Dims: []Dim{DimIP}},
	{Name: "hash:net", Revision: 7, Dims: []Dim{DimNet}},
	{Name: "hash:ip,port", Revision: 7, Dims: []Dim{DimIP, DimPort}},
	{Name: "hash:net,port", Revision: 8, Dims: []Dim{DimNet, DimPort}},
	{Name: "hash:ip,port,ip", Revision: 6, Dims: []Dim{DimIP, DimPort, DimIP}},
	{Name: "hash:ip,port,net", Revision: 8, Dims: []Dim{DimIP, DimPort, DimNet}},
	{Name: "hash:net,iface", Revision: 8, Dims: []Dim{DimNet, DimIface}},
	{Name: "hash:mac", Revision: 1, Dims: []Dim{DimMAC}, Neutral: true},
	{Name: "hash:ip,mac", Revision: 1, Dims: []Dim{DimIP, DimMAC}},
	{Name: "hash:net,net", Revision: 3, Dims: []Dim{DimNet, DimNet}},
	{Name: "hash:net,port,net", Revision: 3, Dims: []Dim{DimNet, DimPort, DimNet}},
	{Name: "hash:ip,mark", Revision: 3, Dims: []Dim{DimIP, DimMark}},
	{Name: "bitmap:ip", Revision: 3, Dims: []Dim{DimIP}, Bitmap: true},
	{Name: "bitmap:ip,mac", Revision: 3, Dims: []Dim{DimIP, DimMAC}, Bitmap: true, OptionalMAC: true},
	{Name: "bitmap:port", Revision: 3, Dims: []Dim{DimPort}, Bitmap: true},
	{Name: "list:set", Revision: 3, Dims: []Dim{DimSet}, List: true},
}

// aliases are the short type names ipset accepts.
var aliases = map[string]string{
	"iphash": "hash:ip", "nethash": "hash:net", "ipporthash": "hash:ip,port",
	"ipportiphash": "hash:ip,port,ip", "ipportnethash": "hash:ip,port,net",
	"netporthash": "hash:net,port", "netifacehash": "hash:net,iface",
	"netnethash": "hash:net,net", "netportnethash": "hash:net,port,net",
	"ipmarkhash": "hash:ip,mark", "machash": "hash:mac",
	"ipmap": "bitmap:ip", "macipmap": "bitmap:ip,mac", "portmap": "bitmap:port",
	"setlist": "list:set",
}

// LookupType finds a type by name or alias.
func LookupType(name string) *Type {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, t := range types {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Types returns all set types.
func Types() []*Type { return types }
