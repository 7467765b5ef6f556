package translate

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/nftables/expr"

	"github.com/xdptables/xdptables/kernel"
)

// Debug renders expressions one per line in a compact form close to
// `nft --debug=netlink`, for golden tests and `xdptables` diagnostics.
func Debug(es []expr.Any) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("[ ")
		switch x := e.(type) {
		case *expr.Meta:
			fmt.Fprintf(&b, "meta load %s => reg %d", metaName(x.Key), x.Register)
		case *expr.Cmp:
			fmt.Fprintf(&b, "cmp %s reg %d 0x%s", cmpName(x.Op), x.Register, hex.EncodeToString(x.Data))
		case *expr.Payload:
			base := map[expr.PayloadBase]string{expr.PayloadBaseLLHeader: "link", expr.PayloadBaseNetworkHeader: "network", expr.PayloadBaseTransportHeader: "transport"}[x.Base]
			fmt.Fprintf(&b, "payload load %db @ %s header + %d => reg %d", x.Len, base, x.Offset, x.DestRegister)
		case *expr.Bitwise:
			fmt.Fprintf(&b, "bitwise reg %d = ( reg %d & 0x%s ) ^ 0x%s", x.DestRegister, x.SourceRegister, hex.EncodeToString(x.Mask), hex.EncodeToString(x.Xor))
		case *expr.Range:
			fmt.Fprintf(&b, "range %s reg %d 0x%s 0x%s", cmpName(x.Op), x.Register, hex.EncodeToString(x.FromData), hex.EncodeToString(x.ToData))
		case *expr.Ct:
			if x.SourceRegister {
				fmt.Fprintf(&b, "ct set %s with reg %d", ctKeyName(x.Key), x.Register)
			} else {
				fmt.Fprintf(&b, "ct load %s => reg %d", ctKeyName(x.Key), x.Register)
			}
		case *expr.Objref:
			fmt.Fprintf(&b, "objref type %d name %s", x.Type, x.Name)
		case *expr.Match:
			fmt.Fprintf(&b, "match name %s rev %d", x.Name, x.Rev)
		case *expr.Counter:
			fmt.Fprintf(&b, "counter pkts %d bytes %d", x.Packets, x.Bytes)
		case *expr.Verdict:
			fmt.Fprintf(&b, "immediate reg 0 %s", verdictName(x))
		case kernel.BoundChain:
			fmt.Fprintf(&b, "immediate reg 0 jump -> bound chain {\n")
			for _, r := range x.BoundRules() {
				b.WriteString(Debug(r))
				b.WriteString("--\n")
			}
			b.WriteString("}")
		case kernel.AnonMap:
			l, _, _, keys, _ := x.AnonMapDef()
			fmt.Fprintf(&b, "lookup reg %d anonymous map (%d entries) => reg %d", l.SourceRegister, len(keys), l.DestRegister)
		default:
			fmt.Fprintf(&b, "%T %+v", e, e)
		}
		b.WriteString(" ]\n")
	}
	return b.String()
}

func ctKeyName(k expr.CtKey) string {
	switch k {
	case expr.CtKeySTATE:
		return "state"
	case expr.CtKeySTATUS:
		return "status"
	case expr.CtKeyMARK:
		return "mark"
	case expr.CtKeyZONE:
		return "zone"
	}
	return fmt.Sprintf("key %d", k)
}

func metaName(k expr.MetaKey) string {
	switch k {
	case expr.MetaKeyIIFNAME:
		return "iifname"
	case expr.MetaKeyOIFNAME:
		return "oifname"
	case expr.MetaKeyL4PROTO:
		return "l4proto"
	case expr.MetaKeyMARK:
		return "mark"
	}
	return fmt.Sprintf("key%d", k)
}

func cmpName(op expr.CmpOp) string {
	return map[expr.CmpOp]string{expr.CmpOpEq: "eq", expr.CmpOpNeq: "neq", expr.CmpOpLt: "lt", expr.CmpOpLte: "lte", expr.CmpOpGt: "gt", expr.CmpOpGte: "gte"}[op]
}

func verdictName(v *expr.Verdict) string {
	switch v.Kind {
	case expr.VerdictAccept:
		return "accept"
	case expr.VerdictDrop:
		return "drop"
	case expr.VerdictReturn:
		return "return"
	case expr.VerdictJump:
		return "jump -> " + v.Chain
	case expr.VerdictGoto:
		return "goto -> " + v.Chain
	}
	return fmt.Sprintf("verdict %d", v.Kind)
}
