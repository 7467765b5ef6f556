package main

import (
	"fmt"
	"os"

	"github.com/xdptables/xdptables/compat"
)

// execute runs a parsed command against the kernel.
func execute(f compat.Family, cmd *compat.Command) int {
	fmt.Fprintf(os.Stderr, "%s v%s (nf_tables): the nftables backend is not available in this build\n", f.Prog(), compat.Version)
	return compat.StatusResource
}
