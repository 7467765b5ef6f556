// Command overlayproto adds the rule of the overlay form that
// bench/overlaycost.sh measures: nft has no syntax for it. The rule
// drops UDP whose destination is in the overlay set: BIG is an interval
// map of address to mark whose catch-all element maps to 0, OVER a set
// of mark . address intervals; the rule loads the destination into
// register 9, BIG's answer for it into register 8, and looks the two up
// together in OVER.
//
// Usage: overlayproto TABLE CHAIN BIG OVER
package main

import (
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: overlayproto TABLE CHAIN BIG OVER")
		os.Exit(2)
	}
	c, err := nftables.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	t := &nftables.Table{Name: os.Args[1], Family: nftables.TableFamilyIPv4}
	c.AddRule(&nftables.Rule{Table: t, Chain: &nftables.Chain{Name: os.Args[2], Table: t}, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		// NFT_REG32_01 ← ip daddr; NFT_REG32_00 ← BIG[daddr] (catch-all 0)
		&expr.Payload{DestRegister: 9, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Lookup{SourceRegister: 9, DestRegister: 8, IsDestRegSet: true, SetName: os.Args[3]},
		&expr.Lookup{SourceRegister: 8, SetName: os.Args[4]},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}})
	if err := c.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
