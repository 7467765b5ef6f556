package kernel

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// SetInfo is what Sets reads about a named set of our table.
type SetInfo struct {
	Name    string
	Handle  uint64
	Comment string // the NFTNL_UDATA_SET_COMMENT of its userdata
}

// Sets lists the named sets of our table in fam, in the kernel's order
// (creation order). A missing table gives no sets.
func (c *Conn) Sets(fam Family) ([]SetInfo, error) {
	msgs, err := c.request(unix.NFT_MSG_GETSET, true, fam, func(e *encoder) {
		e.str(unix.NFTA_SET_TABLE, TableName)
	})
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sets: %w", err)
	}
	var out []SetInfo
	for _, m := range msgs {
		ad, err := decoder(m)
		if err != nil {
			return nil, err
		}
		var s SetInfo
		table := ""
		for ad.Next() {
			switch ad.Type() {
			case unix.NFTA_SET_TABLE:
				table = ad.String()
			case unix.NFTA_SET_NAME:
				s.Name = ad.String()
			case 0x10: // NFTA_SET_HANDLE
				s.Handle = ad.Uint64()
			case unix.NFTA_SET_USERDATA:
				s.Comment = udataString(ad.Bytes(), 7) // NFTNL_UDATA_SET_COMMENT
			}
		}
		if err := ad.Err(); err != nil {
			return nil, err
		}
		if table == TableName {
			out = append(out, s)
		}
	}
	return out, nil
}

// udataString returns the NUL-terminated string TLV of type typ in
// libnftnl userdata (one byte type, one byte length, value).
func udataString(b []byte, typ byte) string {
	for len(b) >= 2 {
		t, n := b[0], int(b[1])
		if len(b) < 2+n {
			return ""
		}
		if t == typ {
			v := b[2 : 2+n]
			for len(v) > 0 && v[len(v)-1] == 0 {
				v = v[:len(v)-1]
			}
			return string(v)
		}
		b = b[2+n:]
	}
	return ""
}
