package kernel

import (
	"errors"

	"golang.org/x/sys/unix"
)

// HasXtExtension asks nft_compat whether the kernel has revision rev of
// the xtables match (target false) or target name for family fam, as
// iptables does when it loads an extension (the kernel loads the module
// when it can). false means the kernel answered ENOENT; other failures
// (no permission, no nf_tables) are returned as errors.
func (c *Conn) HasXtExtension(fam Family, name string, rev uint32, target bool) (bool, error) {
	typ := uint32(0)
	if target {
		typ = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, err := c.requestOnce(uint16(unix.NFNL_SUBSYS_NFT_COMPAT<<8|nfnlMsgCompatGet), false, fam, func(e *encoder) {
		e.str(unix.NFTA_COMPAT_NAME, name)
		e.u32(unix.NFTA_COMPAT_REV, rev)
		e.u32(unix.NFTA_COMPAT_TYPE, typ)
	})
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}

// nfnlMsgCompatGet is NFNL_MSG_COMPAT_GET (linux/netfilter/nf_tables_compat.h).
const nfnlMsgCompatGet = 0

// HasCtTimeout asks nfnetlink_cttimeout whether the namespace has the
// conntrack timeout policy name (made with `nfct add timeout`), which xt
// CT --timeout looks up when the kernel checks the rule. false means the
// kernel answered ENOENT (also when it has no timeout policies at all,
// as xt CT then answers); other failures are returned.
func (c *Conn) HasCtTimeout(fam Family, name string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, err := c.requestOnce(uint16(unix.NFNL_SUBSYS_CTNETLINK_TIMEOUT<<8|ipctnlMsgTimeoutGet), false, fam, func(e *encoder) {
		e.str(ctaTimeoutName, name)
	})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
		return false, nil
	}
	return err == nil, err
}

// IPCTNL_MSG_TIMEOUT_GET and CTA_TIMEOUT_NAME
// (linux/netfilter/nfnetlink_cttimeout.h).
const (
	ipctnlMsgTimeoutGet = 1
	ctaTimeoutName      = 1
)
