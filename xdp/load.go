package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"

	"github.com/cilium/ebpf"

	"github.com/xdptables/xdptables/ipset"
)

// maxIftab is MAX_IFTAB of bpf/classifier.c.
const maxIftab = 4

// program is one loaded generation of the classifier: its maps filled,
// ready to be attached or swapped in.
type program struct {
	coll *ebpf.Collection
	prog *ebpf.Program
}

func (p *program) Close() { p.coll.Close() }

// load creates fresh maps sized for c, fills them, and loads the
// program over them; counters is the shared per-CPU counter map (nil
// for a private one, as in tests). slots[i] is the counter slot of
// compiled rule i.
func load(c *Classifier, slots []uint32, counters *ebpf.Map, sets map[string]*ebpf.Map) (*program, error) {
	spec, err := loadClassifier()
	if err != nil {
		return nil, fmt.Errorf("xdp: reading the embedded program: %w", err)
	}
	if len(c.Vecs) > clsMask {
		return nil, fmt.Errorf("xdp: %d classes, more than %d", len(c.Vecs), clsMask)
	}
	raw := c
	c = c.encoded(slots)
	size := func(name string, n int) {
		if n < 1 {
			n = 1
		}
		spec.Maps[name].MaxEntries = uint32(n)
	}
	// IPv4 address fields as DIR-16-8-8 tables when they fit the
	// budget (dir.go), their tries otherwise
	var dirs [2][]uint32
	dir4 := uint32(0)
	for i, f := range []struct {
		name string
		bit  uint32
		ps   []PrefixClass
	}{{"src4", FSrc, c.Src4}, {"dst4", FDst, c.Dst4}} {
		n := len(f.ps)
		if c.Fields&f.bit != 0 && c.Fams&1 != 0 {
			if t := buildDir4(f.ps, dirFieldBudget); t != nil {
				dirs[i] = t.setLayout(t.nchunks())
			}
		}
		if dirs[i] != nil {
			dir4 |= 1 << i
			n = 1
			if err := setDirTable(spec, f.name, dirs[i]); err != nil {
				return nil, err
			}
		}
		size(f.name, n)
	}
	// IPv6 address fields as per-length hash tables (lenhash.go) when
	// they have few enough prefix lengths, their tries otherwise
	var nlens6, any6, words6, bits6 [2]uint32
	var lens6 [2][maxLens]uint32
	var mask6 [2][maxLens][2]uint64
	hash6 := uint32(0)
	for i, f := range []struct {
		name string
		bit  uint32
		ps   []PrefixClass
	}{{"src6", FSrc, c.Src6}, {"dst6", FDst, c.Dst6}} {
		n := len(f.ps)
		var t *fieldTable
		if c.Fields&f.bit != 0 && c.Fams&2 != 0 {
			t = buildFieldTable(f.ps)
		}
		if t != nil {
			hash6 |= 1 << i
			n = 1
			nlens6[i], lens6[i], mask6[i], any6[i] = t.n, t.lens, t.masks, t.any
			words6[i], bits6[i] = uint32(len(t.words)), t.bits
			if err := putWords(spec, f.name+"_tab", t.words); err != nil {
				return nil, err
			}
		}
		size(f.name, n)
	}
	values := func(name string, f uint32) {
		if c.Fields&f != 0 {
			size(name, valueSlots)
		} else {
			size(name, 1)
		}
	}
	values("sports", FSport)
	values("dports", FDport)
	values("lengths", FLen)
	size("ifaces", len(c.Ifaces))
	size("vecs", len(c.Vecs))
	size("rules", len(c.Rules))
	vs := spec.Maps["vecs"]
	// summary words, rule words
	vs.ValueSize = uint32(8 * (c.Summary + c.Words))
	vs.Key, vs.Value = nil, nil // the BTF type has the largest size
	if err := spec.Variables["nwords"].Set(uint32(c.Words)); err != nil {
		return nil, err
	}
	// Up to maxIftab interfaces are compiled in as constants (iftab).
	var tab [maxIftab]classifierIftab
	ntab := uint32(0)
	if len(c.Ifaces) <= maxIftab {
		for i, ic := range c.Ifaces {
			tab[i] = classifierIftab{Index: ic.Index, Cls: ic.Class,
				MacHi: binary.NativeEndian.Uint32(ic.MAC[:4]), MacLo: binary.NativeEndian.Uint16(ic.MAC[4:])}
		}
		ntab = uint32(len(c.Ifaces))
	}
	var cfg, setSlots, hashBase, hashBits, bitmap, setNlens [MaxSets]uint32
	var setLens [MaxSets][maxLens]uint32
	var setMask [MaxSets][maxLens][2]uint64
	needL4 := c.Fields&(FSport|FDport|FFlags) != 0
	for i, l := range c.Sets {
		cfg[i] = l.Cfg
		if m := sets[l.Set]; m != nil && m.Type() == ebpf.Array {
			ls, err := lenSetOfMap(m)
			if err != nil {
				return nil, err
			}
			if ls.bits > 0 {
				// a per-length table (lenhash.go)
				cfg[i] |= setLen
				setSlots[i], hashBits[i] = m.ValueSize()/8, ls.bits
				setNlens[i], setMask[i] = uint32(len(ls.lens)), lenMasks(ls.lens)
				copy(setLens[i][:], ls.lens)
				needL4 = needL4 || l.Cfg&(setPortSrc|setPortDst) != 0
				continue
			}
			cfg[i] |= setDir
			setSlots[i] = m.ValueSize() / 4
			h, err := setHashOf(m)
			if err != nil {
				return nil, err
			}
			if h.bits > 0 {
				cfg[i] |= setHash
				hashBase[i], hashBits[i], bitmap[i] = h.base, h.bits, h.bitmap
			}
		}
		needL4 = needL4 || l.Cfg&(setPortSrc|setPortDst) != 0
	}
	// lookups besides the address fields: other fields, sets, or the
	// family's vector (bpf/classifier.c "more")
	more := c.Fields&^(FSrc|FDst) != 0 || len(c.Sets) > 0 || (c.Fields&(FSrc|FDst) == 0 && c.Fams == 3)
	// one address field or one set table decides the run, on one
	// interface: the program made for that (bpf/classifier.c
	// xdptables_fast_src)
	progName := "xdptables_classify"
	if c.Single && ntab == 1 {
		switch {
		case !more && c.Fields == FSrc && dir4&1 != 0:
			progName = "xdptables_fast_src"
		case !more && c.Fields == FDst && dir4&2 != 0:
			progName = "xdptables_fast_dst"
		case !more && c.Fields == FSrc && c.Fams == 2:
			progName = "xdptables_fast_src6"
		case !more && c.Fields == FDst && c.Fams == 2:
			progName = "xdptables_fast_dst6"
		case c.Fields == 0 && c.Fams == 1 && len(c.Sets) == 1 && cfg[0]&(setDir|setPortSrc|setPortDst|setV6) == setDir:
			progName = "xdptables_fast_set"
			if cfg[0]&setHash != 0 {
				progName = "xdptables_fast_split"
			}
		case c.Fields == 0 && c.Fams == 1 && len(c.Sets) == 1 && cfg[0]&(setLen|setPortSrc|setPortDst|setV6) == setLen:
			progName = "xdptables_fast_lenset"
		case c.Fields == 0 && c.Fams == 2 && len(c.Sets) == 1 && cfg[0]&(setLen|setPortSrc|setPortDst|setV6) == setLen|setV6:
			progName = "xdptables_fast_lenset6"
		}
	}
	// the protocol and one other field decide: both folded into one
	// table (foldTable); the protocol, a port and an address field:
	// two tables (foldPortAddr)
	if ntab == 1 && c.Fams == 1 && len(c.Sets) == 0 && c.Fields&FProto != 0 {
		var others []uint32
		fold := ""
		switch c.Fields &^ FProto {
		case FDport, FSport:
			vs := raw.Sports
			if c.Fields&FDport != 0 {
				vs = raw.Dports
			}
			_, others = valueTable(vs)
			fold = "xdptables_fast_port"
		case FSrc, FDst:
			// the address table's classes, which the program
			// masks from its values
			if bit := map[uint32]uint32{FSrc: 1, FDst: 2}[c.Fields&^FProto]; dir4&bit != 0 {
				others = make([]uint32, len(raw.Vecs))
				for i := range others {
					others[i] = uint32(i)
				}
				fold = map[uint32]string{1: "xdptables_fast_psrc", 2: "xdptables_fast_pdst"}[bit]
			}
		}
		var tab, tab2 []uint32
		var pidx [256]uint8
		ok := false
		if fold != "" {
			tab, pidx, ok = foldTable(raw, slots, others)
		} else if port, addr := c.Fields&(FSport|FDport), c.Fields&(FSrc|FDst); (port == FSport || port == FDport) &&
			(addr == FSrc && dir4&1 != 0 || addr == FDst && dir4&2 != 0) && c.Fields == FProto|port|addr {
			// the protocol, a port and an address field: two steps
			vs := raw.Sports
			if port == FDport {
				vs = raw.Dports
			}
			_, others = valueTable(vs)
			tab, tab2, pidx, ok = foldPortAddr(raw, slots, others, len(raw.Vecs))
			fold = map[uint32]string{FSrc: "xdptables_fast_ppsrc", FDst: "xdptables_fast_ppdst"}[addr]
		}
		if ok {
			progName = fold
			if err := putTable(spec, "fold_tab", tab); err != nil {
				return nil, err
			}
			if tab2 != nil {
				if err := putTable(spec, "fold2_tab", tab2); err != nil {
					return nil, err
				}
				if err := spec.Variables["fold2_slots"].Set(uint32(len(tab2))); err != nil {
					return nil, fmt.Errorf("xdp: setting fold2_slots: %w", err)
				}
			}
			var base [256]uint32
			for p, i := range pidx {
				base[p] = uint32(i) * uint32(len(others))
			}
			for name, v := range map[string]any{"fold_slots": uint32(len(tab)), "fold_base": base,
				"fold_dst": boolU32(c.Fields&FSport == 0)} {
				if err := spec.Variables[name].Set(v); err != nil {
					return nil, fmt.Errorf("xdp: setting %s: %w", name, err)
				}
			}
		}
	}
	for name := range spec.Programs {
		if name != progName && name != "xdptables_drop_all" {
			delete(spec.Programs, name)
		}
	}
	// the fast programs' MAC test: the first 8 bytes of a frame to
	// the interface, read as a word and shifted left 16 bits
	var fastMAC uint64
	if ntab == 1 {
		var b [8]byte
		copy(b[:], c.Ifaces[0].MAC[:])
		fastMAC = binary.NativeEndian.Uint64(b[:]) << 16
	}
	for name, v := range map[string]any{
		"nsummary": uint32(c.Summary), "fields": c.Fields, "fams": c.Fams,
		"fam_cls": c.FamCls, "nsets": uint32(len(c.Sets)), "set_cfg": cfg, "set_cls": c.SetCls,
		"niftab": ntab, "iftab": tab, "single": boolU32(c.Single), "dir4": dir4, "nvec": uint32(c.NVec),
		"need_l4": boolU32(needL4), "more": boolU32(more), "fast_mac": fastMAC,
		"set_slots": setSlots, "set_hbase": hashBase, "set_hbits": hashBits,
		"set_bitmap": bitmap, "hash6": hash6, "nlens6": nlens6, "lens6": lens6, "mask6": mask6,
		"any6": any6, "tab6_words": words6, "tab6_bits": bits6, "set_nlens": setNlens,
		"set_lens": setLens, "set_mask": setMask,
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("xdp: setting %s: %w", name, err)
		}
	}
	opts := ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{}}
	if counters != nil {
		opts.MapReplacements["counters"] = counters
	}
	for i, l := range c.Sets {
		m := sets[l.Set]
		if m == nil {
			return nil, fmt.Errorf("xdp: no map for set %s", l.Set)
		}
		name := fmt.Sprintf("set%d", i)
		if m.Type() == ebpf.Array {
			// the table, read in place as the program's global
			name = fmt.Sprintf(".data.set%d_tab", i)
			ms := spec.Maps[name]
			ms.ValueSize = m.ValueSize()
			ms.Contents, ms.Key, ms.Value = nil, nil, nil
		}
		opts.MapReplacements[name] = m
		spec.Maps[name].MaxEntries = m.MaxEntries()
		spec.Maps[name].Flags = m.Flags()
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, opts)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("xdp: loading the classifier: %+v", ve)
		}
		return nil, fmt.Errorf("xdp: loading the classifier: %w", err)
	}
	p := &program{coll: coll, prog: coll.Programs[progName]}
	if err := fill(coll, c, slots, dirs, hash6); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// setDirTable makes the data section of field name (src4, dst4) an
// array map whose one value is table t (bpf/classifier.c src4_dir),
// written when the map is created, and tells the program its size.
func setDirTable(spec *ebpf.CollectionSpec, name string, t []uint32) error {
	if err := putTable(spec, name+"_dir", t); err != nil {
		return err
	}
	if err := spec.Variables[name+"_slots"].Set(uint32(len(t))); err != nil {
		return fmt.Errorf("xdp: setting %s_slots: %w", name, err)
	}
	return nil
}

// putWords is putTable for a table of 64-bit words.
func putWords(spec *ebpf.CollectionSpec, global string, t []uint64) error {
	u := make([]uint32, 2*len(t))
	for i, w := range t {
		u[2*i], u[2*i+1] = uint32(w), uint32(w>>32)
	}
	return putTable(spec, global, u)
}

// putTable makes the data section of global (a table the program reads
// in place) an array map whose one value is t.
func putTable(spec *ebpf.CollectionSpec, global string, t []uint32) error {
	ms := spec.Maps[".data."+global]
	if ms == nil {
		return fmt.Errorf("xdp: the program has no table %s", global)
	}
	b := make([]byte, 4*len(t))
	for i, v := range t {
		binary.NativeEndian.PutUint32(b[4*i:], v)
	}
	ms.ValueSize = uint32(len(b))
	ms.Contents = []ebpf.MapKV{{Key: uint32(0), Value: b}}
	// the BTF type has the declared size
	ms.Key, ms.Value = nil, nil
	// the loader would write the global's declared value (its first
	// entry, 0) over the table's start
	delete(spec.Variables, global)
	return nil
}

func fill(coll *ebpf.Collection, c *Classifier, slots []uint32, dirs [2][]uint32, hash6 uint32) error {
	m := coll.Maps
	put := func(name string, k, v any) error {
		if err := m[name].Put(k, v); err != nil {
			return fmt.Errorf("xdp: filling %s: %w", name, err)
		}
		return nil
	}
	for i, v := range c.Vecs {
		b := make([]byte, 8*len(v))
		for j, x := range v {
			binary.NativeEndian.PutUint64(b[8*j:], x)
		}
		if err := put("vecs", uint32(i), b); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		ps   []PrefixClass
	}{{"src4", c.Src4}, {"dst4", c.Dst4}, {"src6", c.Src6}, {"dst6", c.Dst6}} {
		if (f.name == "src4" && dirs[0] != nil) || (f.name == "dst4" && dirs[1] != nil) {
			continue
		}
		if (f.name == "src6" && hash6&1 != 0) || (f.name == "dst6" && hash6&2 != 0) {
			continue
		}
		for _, p := range f.ps {
			if err := put(f.name, prefixKey(p.Prefix), p.Class); err != nil {
				return err
			}
		}
	}
	for _, f := range []struct {
		name string
		vs   []ValueClass
		bit  uint32
	}{{"sports", c.Sports, FSport}, {"dports", c.Dports, FDport}, {"lengths", c.Length, FLen}} {
		if c.Fields&f.bit == 0 {
			continue
		}
		keys, vals := valueTable(f.vs)
		if _, err := m[f.name].BatchUpdate(keys, vals, nil); err != nil {
			for i := range keys {
				if err := put(f.name, keys[i], vals[i]); err != nil {
					return err
				}
			}
		}
	}
	for i, cls := range c.Protos {
		if err := put("protos", uint32(i), cls); err != nil {
			return err
		}
	}
	for i, cls := range c.Flags {
		if err := put("tcpflags", uint32(i), cls); err != nil {
			return err
		}
	}
	for _, ic := range c.Ifaces {
		if err := put("ifaces", ic.Index, classifierIface{Cls: ic.Class, Mac: ic.MAC}); err != nil {
			return err
		}
	}
	for i, r := range c.Rules {
		v := classifierRule{Slot: slots[i]}
		if r.Drop {
			v.Drop = 1
		}
		if err := put("rules", uint32(i), v); err != nil {
			return err
		}
	}
	return nil
}

// maxFoldProtos and maxFoldSlots bound a folded table (foldTable): 16
// protocol classes, 4 Mi entries (16 MiB).
const (
	maxFoldProtos = 16
	maxFoldSlots  = 1 << 22
)

// foldTable folds the protocol and one other field of a run that tests
// only these into one table for the fast programs (bpf/classifier.c
// fold_tab): entry pidx[protocol]*len(others) + j is the answer of the
// first rule that protocol's class and class others[j] of the other
// field both let through, as a single run's class values hold it
// (singleDrop | counter slot for a DROP, else 0: pass). ok is false when
// the table would be over the bounds.
func foldTable(c *Classifier, slots []uint32, others []uint32) (tab []uint32, pidx [256]uint8, ok bool) {
	pcls, pidx, ok := protoClasses(c)
	if !ok || len(others) == 0 || len(pcls)*len(others) > maxFoldSlots {
		// (no other field to fold: not such a run)
		return nil, pidx, false
	}
	vec := func(cls uint32) []uint64 {
		if int(cls) >= len(c.Vecs) {
			return nil // no such class: pass
		}
		return c.Vecs[cls][c.Summary:]
	}
	type pair struct{ p, x uint32 }
	memo := map[pair]uint32{}
	tab = make([]uint32, len(pcls)*len(others))
	for i, pc := range pcls {
		for x, xc := range others {
			v, ok := memo[pair{pc, xc}]
			if !ok {
				v = firstAnswer(c, slots, vec(pc), vec(xc))
				memo[pair{pc, xc}] = v
			}
			tab[i*len(others)+x] = v
		}
	}
	return tab, pidx, true
}

// protoClasses numbers the distinct protocol classes of c (pcls[i] is
// class number i, pidx[protocol] the number of its class); ok is false
// with more than maxFoldProtos.
func protoClasses(c *Classifier) (pcls []uint32, pidx [256]uint8, ok bool) {
	seen := map[uint32]uint8{}
	for p, cls := range c.Protos {
		i, found := seen[cls]
		if !found {
			if len(pcls) == maxFoldProtos {
				return nil, pidx, false
			}
			i = uint8(len(pcls))
			seen[cls] = i
			pcls = append(pcls, cls)
		}
		pidx[p] = i
	}
	return pcls, pidx, true
}

// firstAnswer is the answer, as a single run's class values hold it, of
// the first rule that both rule-word vectors a and b let through (nil:
// none): singleDrop | its counter slot for a DROP, 0 (pass) otherwise.
func firstAnswer(c *Classifier, slots []uint32, a, b []uint64) uint32 {
	for w := 0; w < len(a) && w < len(b); w++ {
		if x := a[w] & b[w]; x != 0 {
			r := w*64 + bits.TrailingZeros64(x)
			if r < len(c.Rules) && c.Rules[r].Drop {
				return singleDrop | slots[r]&0xffff
			}
			return 0
		}
	}
	return 0
}

// maxFold2Work bounds the vector words foldPortAddr ANDs (each pair of
// protocol and port classes with each address class): 2^27, a fraction
// of a second; the pairs' vectors it keeps, an eighth of that (128 MiB).
const maxFold2Work = 1 << 27

// foldPortAddr folds a run that tests only the protocol, one port and
// one address field for xdptables_fast_ppsrc/_ppdst (bpf/classifier.c
// fold2_tab): ports[v] is the port field's class of port value v (as
// valueTable gives them); nAddr is how many classes the address table
// has. tab, at pidx[protocol]*len(ports) + port, is the start of the
// row in tab2 of that protocol and port: the rule vector of their two
// classes, one row per distinct vector; tab2 at row + address class is
// the answer of the first rule the three classes let through, as
// foldTable's. ok is false when the tables or the work would be over
// the bounds.
func foldPortAddr(c *Classifier, slots []uint32, ports []uint32, nAddr int) (tab, tab2 []uint32, pidx [256]uint8, ok bool) {
	pcls, pidx, ok := protoClasses(c)
	if !ok || len(pcls)*len(ports) > maxFoldSlots || nAddr == 0 {
		return nil, nil, pidx, false
	}
	// the distinct port classes, then the distinct vectors of each
	// protocol class with each of them: the rows
	xcls := []uint32{}
	xidx := map[uint32]int{}
	for _, xc := range ports {
		if _, ok := xidx[xc]; !ok {
			xidx[xc] = len(xcls)
			xcls = append(xcls, xc)
		}
	}
	if len(pcls)*len(xcls)*c.Words > maxFold2Work/8 {
		// (the pairs' vectors alone would take over 128 MiB)
		return nil, nil, pidx, false
	}
	var rows [][]uint64
	rowOf := map[string]uint32{}
	pairRow := make([]uint32, len(pcls)*len(xcls))
	for i, pc := range pcls {
		for j, xc := range xcls {
			v := make([]uint64, c.Words)
			if int(pc) < len(c.Vecs) && int(xc) < len(c.Vecs) {
				vp, vx := c.Vecs[pc][c.Summary:], c.Vecs[xc][c.Summary:]
				for w := range v {
					v[w] = vp[w] & vx[w]
				}
			}
			key := make([]byte, 8*len(v))
			for w, x := range v {
				binary.NativeEndian.PutUint64(key[8*w:], x)
			}
			r, seen := rowOf[string(key)]
			if !seen {
				r = uint32(len(rows))
				rowOf[string(key)] = r
				rows = append(rows, v)
			}
			pairRow[i*len(xcls)+j] = r
		}
	}
	if len(rows)*nAddr > maxFoldSlots || len(rows)*nAddr*c.Words > maxFold2Work {
		return nil, nil, pidx, false
	}
	tab2 = make([]uint32, len(rows)*nAddr)
	for r, v := range rows {
		for a := 0; a < nAddr; a++ {
			tab2[r*nAddr+a] = firstAnswer(c, slots, v, c.Vecs[a][c.Summary:])
		}
	}
	tab = make([]uint32, len(pcls)*len(ports))
	for i := range pcls {
		for p, xc := range ports {
			tab[i*len(ports)+p] = pairRow[i*len(xcls)+xidx[xc]] * uint32(nAddr)
		}
	}
	return tab, tab2, pidx, true
}

// valueSlots is the size of a 16-bit field's map: one entry per value,
// then NO_PORTS (bpf/classifier.c), the entry for packets without ports.
const valueSlots = 65537

// valueTable expands a 16-bit field's prefixes into the entries of its
// array map. A value no prefix covers gets a class that does not exist,
// so the program passes the packet, as a miss in a trie would.
func valueTable(vs []ValueClass) (keys, vals []uint32) {
	keys = make([]uint32, valueSlots)
	vals = make([]uint32, valueSlots)
	for i := range keys {
		keys[i] = uint32(i)
		vals[i] = ^uint32(0)
	}
	for _, v := range vs {
		if !v.Present {
			vals[valueSlots-1] = v.Class
			continue
		}
		lo := int(v.Value) &^ (1<<(16-v.Bits) - 1)
		for x := lo; x < lo+1<<(16-v.Bits); x++ {
			vals[x] = v.Class
		}
	}
	return keys, vals
}

// newSetMap creates the map mirroring set s, filled: a table (an array
// map) when dirSet and within budget, with a hash of its /32s when only
// that keeps it within budget (sethash.go), a per-length table
// (lenhash.go) for other sets and those over budget, an LPM trie for
// sets of more than maxLens prefix lengths.
func newSetMap(s *ipset.Set) (*ebpf.Map, error) {
	if dirSet(s) {
		m, err := newDirSetMap(s)
		if m != nil || err != nil {
			return m, err
		}
		m, err = newHashSetMap(s)
		if m != nil || err != nil {
			return m, err
		}
	}
	if lenSets {
		m, err := newLenSetMap(s)
		if m != nil || err != nil {
			return m, err
		}
	}
	spec, err := loadClassifier()
	if err != nil {
		return nil, err
	}
	ms := spec.Maps["set0"].Copy()
	ms.MaxEntries = max(s.MaxElem, uint32(len(s.Entries)), 1)
	ms.Name = "xdpt_set"
	m, err := ebpf.NewMap(ms)
	if err != nil {
		return nil, fmt.Errorf("xdp: creating the map of set %s: %w", s.Name, err)
	}
	ks, vs := setContents(s)
	if len(ks) > 0 {
		if _, err := m.BatchUpdate(ks, vs, nil); err != nil {
			// LPM tries have no batch operations on older kernels
			for i := range ks {
				if err := m.Put(ks[i], vs[i]); err != nil {
					m.Close()
					return nil, fmt.Errorf("xdp: filling the map of set %s: %w", s.Name, err)
				}
			}
		}
	}
	return m, nil
}

func prefixKey(p netip.Prefix) []byte {
	a := p.Addr().AsSlice()
	k := make([]byte, 4+len(a))
	binary.NativeEndian.PutUint32(k, uint32(p.Bits()))
	copy(k[4:], a)
	return k
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// A class as the maps and constants hold it (bpf/classifier.c CLS_*):
// the class in the low 23 bits, and in the next 8 the word of the
// class's first rule (255: none), so that the search knows where to
// start without reading the vectors' headers first.
const (
	clsMask      = 1<<23 - 1
	clsWordShift = 23
)

// With c.Single, a class value is not a class but the answer
// (bpf/classifier.c SINGLE_*): singleDrop and the counter slot of the
// class's first rule when that rule is a DROP, else 0 (pass); no vector
// is read.
const singleDrop = 1 << 30

// encoded is a copy of c with every class value encoded; slots[i] is the
// counter slot of compiled rule i.
func (c *Classifier) encoded(slots []uint32) *Classifier {
	e := *c
	enc := func(cls uint32) uint32 {
		if c.Single {
			if int(cls) < len(c.First) && c.First[cls] != NoRule && c.Rules[c.First[cls]].Drop {
				return singleDrop | slots[c.First[cls]]&0xffff
			}
			return 0
		}
		w := uint32(255)
		if int(cls) < len(c.First) && c.First[cls] != NoRule {
			w = c.First[cls] / 64
		}
		return cls | w<<clsWordShift
	}
	prefixes := func(ps []PrefixClass) []PrefixClass {
		out := make([]PrefixClass, len(ps))
		for i, p := range ps {
			out[i] = PrefixClass{Prefix: p.Prefix, Class: enc(p.Class)}
		}
		return out
	}
	values := func(vs []ValueClass) []ValueClass {
		out := make([]ValueClass, len(vs))
		for i, v := range vs {
			v.Class = enc(v.Class)
			out[i] = v
		}
		return out
	}
	e.Src4, e.Dst4, e.Src6, e.Dst6 = prefixes(c.Src4), prefixes(c.Dst4), prefixes(c.Src6), prefixes(c.Dst6)
	e.Sports, e.Dports, e.Length = values(c.Sports), values(c.Dports), values(c.Length)
	for i := range e.Protos {
		e.Protos[i] = enc(c.Protos[i])
	}
	for i := range e.Flags {
		e.Flags[i] = enc(c.Flags[i])
	}
	e.Ifaces = make([]IfaceClass, len(c.Ifaces))
	for i, ic := range c.Ifaces {
		ic.Class = enc(ic.Class)
		e.Ifaces[i] = ic
	}
	for i := range e.FamCls {
		e.FamCls[i] = enc(c.FamCls[i])
	}
	for i := 0; i < 2*len(c.Sets); i++ {
		e.SetCls[i] = enc(c.SetCls[i])
	}
	return &e
}
