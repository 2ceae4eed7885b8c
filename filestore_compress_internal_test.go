package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

// FuzzCompressedLog: a compressed log reads as the plain one, through
// every reader (the file reader, DecodeLog, the Decoder, VerifyReader);
// a damaged one (a byte changed, or cut short) gives the same answer
// from each reader, an error or the log its stream decodes to, and no
// panic.
func FuzzCompressedLog(f *testing.F) {
	f.Add([]byte(`{"type":"session","version":3,"id":"s"}`+"\n"+`{"type":"custom","id":"a","parentId":null}`+"\n\n{bad\n"+`{"type":"custom","id":"b"`), uint16(0), uint8(0), uint16(0))
	f.Add([]byte(`{"type":"session","version":3,"id":"s"}`+"\n"+`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}`+"\n"), uint16(30), uint8(7), uint16(0))
	f.Add([]byte(`{"type":"session","id":"v1"}`+"\n"+`{"type":"message","message":{"role":"user","content":"x"}}`), uint16(0), uint8(0), uint16(9))
	f.Fuzz(func(t *testing.T, plain []byte, at uint16, flip uint8, cut uint16) {
		comp, err := compressLog(plain)
		if err != nil {
			t.Fatal(err)
		}
		if flip != 0 && len(comp) > 0 {
			comp[int(at)%len(comp)] ^= flip
		}
		if cut != 0 && len(comp) > 0 {
			comp = comp[:len(comp)-int(cut)%len(comp)]
		}
		damaged := flip != 0 || cut != 0
		src := plain
		if damaged {
			src, err = decompressLog(comp, DefaultMaxLogBytes)
			if err != nil || !hasZstdMagic(comp) {
				// Refused or no longer compressed: every reader agrees
				// with DecodeLog on whether it reads.
				_, derr := DecodeLog(comp, nil)
				_, _, _, ferr := readLogFile(bytes.NewReader(comp), int64(len(comp)), nil)
				_, serr := ReadLog(bytes.NewReader(comp), nil)
				if (derr == nil) != (ferr == nil) || (derr == nil) != (serr == nil) {
					t.Fatalf("DecodeLog %v, readLogFile %v, ReadLog %v", derr, ferr, serr)
				}
				return
			}
		}
		want, werr := DecodeLog(src, nil)
		got, _, end, err := readLogFile(bytes.NewReader(comp), int64(len(comp)), nil)
		if (err == nil) != (werr == nil) {
			t.Fatalf("compressed: %v, plain: %v", err, werr)
		}
		dl, derr := DecodeLog(comp, nil)
		if (derr == nil) != (werr == nil) {
			t.Fatalf("DecodeLog compressed: %v, plain: %v", derr, werr)
		}
		// ReadLogAt reads either as DecodeLog reads the plain one.
		for _, in := range [][]byte{src, comp} {
			al, aerr := ReadLogAt(bytes.NewReader(in), int64(len(in)), nil)
			if (aerr == nil) != (werr == nil) {
				t.Fatalf("ReadLogAt: %v, DecodeLog of the plain log: %v", aerr, werr)
			}
			if aerr == nil {
				if len(al.Entries) != len(want.Entries) || fmt.Sprint(al.Malformed) != fmt.Sprint(want.Malformed) ||
					fmt.Sprint(al.Torn) != fmt.Sprint(want.Torn) || fmt.Sprint(al.Partial) != fmt.Sprint(want.Partial) || al.MigratedFrom != want.MigratedFrom {
					t.Fatalf("ReadLogAt: %d entries %v %v %v, want %d %v %v %v", len(al.Entries), al.Malformed, al.Torn, al.Partial,
						len(want.Entries), want.Malformed, want.Torn, want.Partial)
				}
				for i := range want.Entries {
					sameEntry(t, al.Entries[i], want.Entries[i])
				}
			}
		}
		sl, serr := ReadLog(bytes.NewReader(comp), nil)
		pl, perr := ReadLog(bytes.NewReader(src), nil)
		if (serr == nil) != (perr == nil) {
			t.Fatalf("ReadLog compressed: %v, plain: %v", serr, perr)
		}
		if serr == nil && fmt.Sprint(ids(sl.Entries)) != fmt.Sprint(ids(pl.Entries)) {
			t.Fatalf("ReadLog: %v, plain %v", ids(sl.Entries), ids(pl.Entries))
		}
		vf, vn, verr := VerifyReader(context.Background(), bytes.NewReader(comp), nil, nil)
		pf, pn, perr := VerifyReader(context.Background(), bytes.NewReader(src), nil, nil)
		if (verr == nil) != (perr == nil) || vn != pn || fmt.Sprint(vf) != fmt.Sprint(pf) {
			t.Fatalf("VerifyReader compressed: %d %v %v, plain: %d %v %v", vn, vf, verr, pn, pf, perr)
		}
		if werr != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) && err.Error() != werr.Error() {
				t.Fatalf("error %q, plain %q", err, werr)
			}
			return
		}
		if !end.compressed || end.size != int64(len(src)) {
			t.Fatalf("end %+v of a compressed log of %d bytes", end, len(src))
		}
		for _, l := range []*Log{got, dl} {
			if len(l.Entries) != len(want.Entries) || fmt.Sprint(l.Malformed) != fmt.Sprint(want.Malformed) ||
				fmt.Sprint(l.Torn) != fmt.Sprint(want.Torn) || fmt.Sprint(l.Partial) != fmt.Sprint(want.Partial) {
				t.Fatalf("got %d entries %v %v %v, want %d %v %v %v", len(l.Entries), l.Malformed, l.Torn, l.Partial,
					len(want.Entries), want.Malformed, want.Torn, want.Partial)
			}
			for i := range want.Entries {
				sameEntry(t, l.Entries[i], want.Entries[i])
			}
		}
	})
}
