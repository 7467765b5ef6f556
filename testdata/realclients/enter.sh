#!/bin/sh
# enter.sh SIDE SCRIPT ARGS... runs SCRIPT with sh, already inside the test's
# network namespace and in a private mount namespace of its own
# (unshare -m --propagation private), so that nothing mounted here is seen
# by the host. For SIDE "ours" the reference binaries the clients call
# (every iptables name is a symlink to $XT_MULTI; ipset is $IPSET_BIN) are
# covered with xdptables ($XDPT_BIN), which picks its personality from
# argv[0] as the reference does. $TOOLS is the tree the clients' Debian
# packages were unpacked into; with $OVERLAY set its /usr/share, /sbin
# and the test's etc/ are laid over the system's, and /var/lib gets a
# private writable layer in $W, as an installed package would see them.
set -u
side=$1
shift
if [ -n "${OVERLAY:-}" ]; then
	mount -t overlay overlay -o "lowerdir=$TOOLS/usr/share:/usr/share" /usr/share || exit 99
	mount -t overlay overlay -o "lowerdir=$TOOLS/sbin:/usr/sbin" /usr/sbin || exit 99
	mount -t overlay overlay -o "lowerdir=$W/etc:/etc" /etc || exit 99
	mkdir -p "$W/varlib" "$W/varlib-work"
	mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$W/varlib,workdir=$W/varlib-work" /var/lib || exit 99
fi
if [ "$side" = ours ]; then
	mount --bind "$XDPT_BIN" "$XT_MULTI" || exit 99
	mount --bind "$XDPT_BIN" "$IPSET_BIN" || exit 99
fi
exec sh "$@"
