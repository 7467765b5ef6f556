//go:build ignore

// pause is the whole root file system of the containers that
// TestRealDockerd runs: it waits for SIGTERM (no image comes from
// the internet).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
