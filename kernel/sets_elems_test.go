package kernel

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// elemsOf decodes the elements of every NEWSETELEM message of a batch.
func elemsOf(t *testing.T, b *Batch) (els []nftables.SetElement, itemBytes int) {
	t.Helper()
	for _, m := range parseBatch(t, b) {
		if m.Header.Type != nftType(0x0c) { // NFT_MSG_NEWSETELEM
			continue
		}
		// eachElem reads items of type NFTA_LIST_ELEM only; items are
		// numbered here (and by the library): present each as one.
		err := tlv(m.Data[4:], func(typ uint16, v []byte) error {
			if typ != unix.NFTA_SET_ELEM_LIST_ELEMENTS {
				return nil
			}
			return tlv(v, func(_ uint16, item []byte) error {
				var e encoder
				e.buf = make([]byte, 4)
				l := e.nest(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
				i := e.nest(unix.NFTA_LIST_ELEM)
				e.buf = append(e.buf, item...)
				e.pad()
				e.endNest(i)
				e.endNest(l)
				return eachElem(e.buf, func(el *nftables.SetElement) error {
					c := *el
					c.Key = append([]byte(nil), el.Key...)
					if el.KeyEnd != nil {
						c.KeyEnd = append([]byte(nil), el.KeyEnd...)
					}
					els = append(els, c)
					return nil
				})
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		// the items: the message minus nfgenmsg, the set and table names
		// and the list's header
		itemBytes += len(m.Data) - 4 - nlmAlign(4+len("big")+1) - nlmAlign(4+len(TableName)+1) - 4
	}
	return els, itemBytes
}

// TestElementsSeqMatchesSlice: AddElementsSeq encodes what AddElements
// and the library's AddSetElements encode, split the same way, and
// ElementSize predicts the size of the items.
func TestElementsSeqMatchesSlice(t *testing.T) {
	var elems []nftables.SetElement
	size := 0
	for i := range 20000 {
		el := nftables.SetElement{Key: []byte{10, byte(i >> 16), byte(i >> 8), byte(i)}}
		switch i % 5 {
		case 1:
			el.IntervalEnd = true
		case 2:
			el.Timeout = time.Duration(i) * time.Second
		case 3:
			el.Comment = fmt.Sprintf("comment %d", i)
		case 4:
			el.KeyEnd = []byte{11, byte(i >> 16), byte(i >> 8), byte(i)}
		}
		elems = append(elems, el)
		size += ElementSize(len(el.Key), len(el.KeyEnd), el.IntervalEnd, el.Timeout != 0, len(el.Comment))
	}
	s := &nftables.Set{Name: "big", KeyType: nftables.TypeIPAddr, HasTimeout: true, Interval: true}
	b1 := NewBatch()
	b1.AddElements(IPv4, s.Name, true, elems, false)
	b2 := NewBatch()
	b2.AddElementsSeq(IPv4, s.Name, true, func(yield func(*nftables.SetElement) bool) {
		var el nftables.SetElement
		for i := range elems {
			el = elems[i] // the same variable each time
			if !yield(&el) {
				return
			}
		}
	}, false)
	b3 := NewBatch()
	b3.AddSetElements(IPv4, s, elems, false)
	if string(b1.e.buf) != string(b2.e.buf) {
		t.Fatalf("AddElementsSeq encodes differently from AddElements")
	}
	if b1.Messages() < 2 {
		t.Fatalf("%d messages: not split", b1.Messages())
	}
	got, items := elemsOf(t, b2)
	want, _ := elemsOf(t, b3)
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			if i < len(want) && !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("element %d: %+v, library %+v (%d vs %d)", i, got[i], want[i], len(got), len(want))
			}
		}
		t.Errorf("elements differ from the library.s")
	}
	if items != size {
		t.Errorf("ElementSize: predicted %d bytes, encoded %d", size, items)
	}
}
