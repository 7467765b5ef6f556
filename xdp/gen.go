package xdp

// The generated classifier_bpfel.go and classifier_bpfel.o are committed so
// that building needs no clang; `make generate` rebuilds them.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -target bpfel -cflags "-O2 -g -Wall -mcpu=v3 -I/usr/include/x86_64-linux-gnu" classifier bpf/classifier.c
