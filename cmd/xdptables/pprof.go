//go:build pprof

package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// With -tags pprof, XDPTABLES_CPUPROFILE=FILE writes a CPU profile of the
// command and XDPTABLES_MEMPROFILE=FILE an allocation profile (every
// allocation sampled) when it ends. The default build has neither, so
// that they cost nothing in size or start-up.
func init() {
	if f := os.Getenv("XDPTABLES_MEMPROFILE"); f != "" {
		runtime.MemProfileRate = 1
		atExit = append(atExit, func() {
			if w, err := os.Create(f); err == nil {
				pprof.Lookup("allocs").WriteTo(w, 0)
				w.Close()
			}
		})
	}
	if f := os.Getenv("XDPTABLES_CPUPROFILE"); f != "" {
		w, err := os.Create(f)
		if err != nil {
			return
		}
		if pprof.StartCPUProfile(w) != nil {
			w.Close()
			return
		}
		atExit = append(atExit, func() { pprof.StopCPUProfile(); w.Close() })
	}
}
