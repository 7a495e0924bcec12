package codec

import (
	"bytes"
	encjson "encoding/json"
	"fmt"
	"io"
)

// Input is a stored value read from a file or pipe, with what the input
// said about where it came from.
type Input struct {
	// Value is the stored value, byte for byte.
	Value []byte
	// Key is the etcd key, when the input named it (etcdctl -w json).
	Key string
	// ModRevision, CreateRevision, Version and Lease are set from
	// etcdctl -w json input.
	ModRevision, CreateRevision, Version, Lease int64
	// NewlineUnknown is set for raw input that ends in a newline which
	// may be the one `etcdctl get --print-value-only` appends, or the
	// value's own: ReadInput cannot tell without decrypting it (an
	// encrypted value's last byte is any byte). The caller that decrypts
	// tries Value as it is first, then without its last byte.
	NewlineUnknown bool
}

// maxInput bounds what ReadInput reads: etcd's own request limit is
// 1.5 MiB by default and values can never exceed a few MiB.
const maxInput = 64 << 20

// ReadInput reads one stored value in any of the forms etcdctl prints it:
//
//   - the raw bytes (as `etcdctl get KEY --print-value-only` writes them,
//     with the newline etcdctl appends tolerated; for an encrypted value,
//     see Input.NewlineUnknown);
//   - the JSON of `etcdctl get KEY -w json`, whose value and key are base64.
func ReadInput(r io.Reader) (*Input, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	if len(b) > maxInput {
		return nil, fmt.Errorf("read input: more than %d bytes: not a stored value", maxInput)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("read input: %w", ErrEmpty)
	}
	if in, ok, err := parseEtcdctlJSON(b); ok || err != nil {
		return in, err
	}
	v := trimEtcdctlNewline(b)
	return &Input{Value: v, NewlineUnknown: Detect(v) == FormatEncrypted && v[len(v)-1] == '\n'}, nil
}

// trimEtcdctlNewline removes the newline `etcdctl --print-value-only`
// appends, when it is not part of the value.
func trimEtcdctlNewline(b []byte) []byte {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return b
	}
	switch Detect(b) {
	case FormatProtobuf:
		// A valid envelope never ends in a lone field tag 0x0a: if the
		// whole input does not parse but the input without the newline
		// does, the newline is etcdctl's.
		if _, err := ParseUnknown(b); err != nil {
			if _, err2 := ParseUnknown(b[:len(b)-1]); err2 == nil {
				return b[:len(b)-1]
			}
		}
	case FormatJSON:
		// The apiserver ends a JSON value with exactly one newline.
		if bytes.HasSuffix(b, []byte("\n\n")) {
			return b[:len(b)-1]
		}
	}
	return b
}

type etcdctlKV struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
	Version        int64  `json:"version"`
	Lease          int64  `json:"lease"`
}

// parseEtcdctlJSON recognises `etcdctl get -w json` output.
func parseEtcdctlJSON(b []byte) (*Input, bool, error) {
	if Detect(b) != FormatJSON {
		return nil, false, nil
	}
	var probe map[string]encjson.RawMessage
	if err := encjson.Unmarshal(b, &probe); err != nil {
		return nil, false, nil
	}
	_, hasHeader := probe["header"]
	rawKVs, hasKVs := probe["kvs"]
	if !hasHeader {
		return nil, false, nil
	}
	if !hasKVs {
		return nil, true, fmt.Errorf("read input: etcdctl JSON output holds no key (count 0): %w", ErrEmpty)
	}
	var kvs []etcdctlKV // []byte fields decode from base64
	if err := encjson.Unmarshal(rawKVs, &kvs); err != nil {
		return nil, true, malformed("read input: etcdctl JSON kvs: %v", err)
	}
	if len(kvs) != 1 {
		return nil, true, fmt.Errorf("read input: etcdctl JSON output holds %d keys; give it one", len(kvs))
	}
	kv := kvs[0]
	return &Input{Value: kv.Value, Key: string(kv.Key), ModRevision: kv.ModRevision,
		CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease}, true, nil
}
