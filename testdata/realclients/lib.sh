# Sourced by the client scenarios: step runs a command and prints its
# output and status under a header; dump prints the state both sides
# compare (iptables-save, ip6tables-save, ipset save).
step() { echo "### $*"; "$@" 2>&1; echo "rc=$?"; }
dump() {
	echo "### state: $1"
	iptables-save | grep -v '^#'
	ip6tables-save | grep -v '^#'
	ipset save
}
