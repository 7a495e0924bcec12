package inspect

import (
	"encoding/json"
	"io"

	"github.com/etcdpvc/etcdpvc/codec"
)

// WriteDocument writes v, a report or a result, as format says: "yaml",
// or indented JSON followed by a newline for any other format.
func WriteDocument(w io.Writer, format string, v any) error {
	var b []byte
	var err error
	if format == "yaml" {
		b, err = codec.YAML(v)
	} else {
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
