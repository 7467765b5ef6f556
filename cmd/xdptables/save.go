package main

import "github.com/xdptables/xdptables/compat"

func saveMain(f compat.Family, args []string) int    { return execute(f, nil) }
func restoreMain(f compat.Family, args []string) int { return execute(f, nil) }
