# xdptables — see README.md
GO      ?= go
BIN     := bin/xdptables
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test unit deps demo fuzz vet clean bench generate

all: build

# static, as the package builds it (tools/package): no dynamic loader or
# libc mapped at start, about 1.5 MB less peak RSS for every command
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/xdptables

# deps installs the reference tools the kernel tests compare against,
# conntrack for the CT helper tests, rpm and bash-completion for the
# package tests (tools/package), and the
# interpreters of the real clients TestRealClients runs (python3 for
# fail2ban, perl for Shorewall; the clients come from their packages),
# and what TestRealFirewalld's firewalld needs besides its packages: the
# gi and dbus modules of python3 (libraries) and dbus-daemon, which the
# test starts in its namespaces with a bus configuration of its own.
deps:
	@if [ "$$(id -u)" = 0 ]; then \
	  missing=""; \
	  for t in ip:iproute2 nft:nftables iptables-nft:iptables ipset:ipset ping:iputils-ping rpm:rpm conntrack:conntrack; do \
	    command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; \
	  done; \
	  [ -r /usr/share/bash-completion/bash_completion ] || missing="$$missing bash-completion"; \
	  [ -x /usr/bin/python3 ] || missing="$$missing python3"; \
	  perl -MDigest::SHA -e 1 2>/dev/null || missing="$$missing perl"; \
	  /usr/bin/python3 -c 'import gi' 2>/dev/null || missing="$$missing python3-gi"; \
	  /usr/bin/python3 -c 'import dbus' 2>/dev/null || missing="$$missing python3-dbus"; \
	  command -v dbus-daemon >/dev/null 2>&1 || missing="$$missing dbus-daemon"; \
	  if [ -n "$$missing" ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  fi; \
	fi

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# test runs unit tests everywhere and kernel tests as root. As root a
# skipped test is a failure, so that CI cannot pass by skipping.
# The timeout catches a hang, and fires before CI's 90 minutes so that the
# log shows where: a run takes ~11 min on a quiet machine, and several
# times that when the two cores are shared with other work.
test: deps vet build
	@$(GO) test -count=1 -timeout 75m -v ./... > .test.log 2>&1; rc=$$?; \
	grep -E '^(=== RUN|--- FAIL|FAIL|ok|panic)' .test.log | grep -v '^=== RUN' ; \
	grep -E -- '--- SKIP' .test.log | sed 's/^/skipped: /'; \
	if [ $$rc -ne 0 ]; then grep -B2 -A20 -- '--- FAIL' .test.log | head -300; exit $$rc; fi; \
	if [ "$$(id -u)" = 0 ] && grep -q -- '--- SKIP' .test.log; then \
	  echo "FAIL: tests were skipped while running as root"; exit 1; fi; \
	echo "all tests passed"

unit:
	$(GO) test -count=1 ./compat/... ./translate/... ./ipset/...

FUZZTIME ?= 60s
fuzz:
	$(GO) test ./compat -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME)
	$(GO) test ./compat -run '^$$' -fuzz FuzzRestore -fuzztime $(FUZZTIME)
	$(GO) test ./translate -run '^$$' -fuzz 'FuzzFromKernel$$' -fuzztime $(FUZZTIME)
	$(GO) test ./translate -run '^$$' -fuzz FuzzFromKernelExprs -fuzztime $(FUZZTIME)
	$(GO) test ./ipset -run '^$$' -fuzz FuzzIpsetRestore -fuzztime $(FUZZTIME)
	$(GO) test ./ipset -run '^$$' -fuzz FuzzIpsetCommand -fuzztime $(FUZZTIME)

# bench compares restore and single commands with iptables-nft, and the
# ipset personality with ipset (root; see bench/iptables.sh for SIZES,
# LOADED, ONECHAIN, REPS, OUT and bench/ipset.sh for BIG, SMALL, BIGIP, REPS),
# then the XDP path under veth traffic (bench/xdp-traffic.sh: N, ROUNDS,
# RULES, SET, RXCPU, CASES; a few minutes).
bench: deps build
	@command -v /usr/bin/time >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }
	bash bench/iptables.sh $(BIN)
	bash bench/ipset.sh $(BIN)
	bash bench/xdp-traffic.sh $(BIN)

# generate rebuilds the XDP program's committed Go bindings and object
# (needs clang, llvm and libbpf-dev).
generate:
	$(GO) generate ./xdp/...

# package builds .deb and .rpm for amd64 and arm64 into dist/ with nfpm
# (tools/package); PKG_ARCH and PKG_FORMATS narrow it (PKG_ARCH=amd64 PKG_FORMATS=deb).
PKG_ARCH    ?= amd64,arm64
PKG_FORMATS ?= deb,rpm
.PHONY: package
package:
	$(GO) run ./tools/package -arch $(PKG_ARCH) -formats $(PKG_FORMATS) -out dist

demo: deps build
	./demo/demo.sh $(BIN)

clean:
	rm -rf bin .test.log
