package backup

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

func TestTailBufferKeepsTheEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 7, 64, 1000} {
		var all bytes.Buffer
		tb := &tailBuffer{max: size}
		for range 200 {
			p := make([]byte, r.IntN(3*size+1))
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			all.Write(p)
			if n, err := tb.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			want := all.Bytes()[max(0, all.Len()-size):]
			if !bytes.Equal(tb.Bytes(), want) {
				t.Fatalf("max %d after %d bytes: kept %d bytes that are not the last ones", size, all.Len(), len(tb.Bytes()))
			}
		}
	}
}

func TestHeadBufferKeepsTheStart(t *testing.T) {
	h := &headBuffer{max: 5}
	for _, s := range []string{"ab", "cdef", "gh"} {
		if n, _ := h.Write([]byte(s)); n != len(s) {
			t.Fatalf("Write(%q) = %d", s, n)
		}
	}
	if got := h.String(); got != "abcde" {
		t.Fatalf("kept %q, want abcde", got)
	}
}

func TestBackupNamesSortAsTimes(t *testing.T) {
	if got := backupName(mustTime(t, "2026-11-23T19:47:49.519Z")); got != "20261123T194749519Z" {
		t.Fatalf("name %s", got)
	}
	if a, b := backupName(mustTime(t, "2026-11-23T19:47:49.009Z")), backupName(mustTime(t, "2026-11-23T19:47:49.100Z")); a >= b {
		t.Fatalf("%s sorts after %s", a, b)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
