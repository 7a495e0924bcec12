package store

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkListHashKV checks that ListHashKV at rev hands out what List does
// and hashes as HashKVGroups does, the hashes before the first key.
func checkListHashKV(t *testing.T, name string, b *Bolt, rev int64) {
	t.Helper()
	ctx := context.Background()
	group := func(key []byte) string { return string(key[len(key)-1:]) }
	wantH, wantG, wantErr := b.HashKVGroups(ctx, rev, group)
	var want []*KeyValue
	wantRev, wantListErr := b.List(ctx, "", ListOptions{Revision: rev}, func(kv *KeyValue) error {
		want = append(want, kv)
		return nil
	})
	var got []*KeyValue
	var gotH HashKV
	var gotG map[string]uint32
	var gotErr error
	calls := 0
	gotRev, gotListErr := b.ListHashKV(ctx, "", ListOptions{Revision: rev}, group, func(h HashKV, g map[string]uint32, err error) {
		calls++
		if len(got) > 0 {
			t.Errorf("%s: ListHashKV(%d): hashes told after %d keys", name, rev, len(got))
		}
		gotH, gotG, gotErr = h, g, err
	}, func(kv *KeyValue) error {
		c := *kv
		c.Value = bytes.Clone(kv.Value)
		got = append(got, &c)
		return nil
	})
	if calls != 1 {
		t.Errorf("%s: ListHashKV(%d): hashes told %d times", name, rev, calls)
	}
	if gotH != wantH || !cmp.Equal(gotG, wantG) || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Errorf("%s: ListHashKV(%d) hashes %+v %v %v, HashKVGroups %+v %v %v", name, rev, gotH, gotG, gotErr, wantH, wantG, wantErr)
	}
	if gotRev != wantRev || !cmp.Equal(got, want) || (gotListErr == nil) != (wantListErr == nil) || gotListErr != nil && gotListErr.Error() != wantListErr.Error() {
		t.Errorf("%s: ListHashKV(%d) listed %d keys at %d (%v), List %d at %d (%v)", name, rev, len(got), gotRev, gotListErr, len(want), wantRev, wantListErr)
	}
}
