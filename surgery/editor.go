package surgery

import (
	"bytes"
	"fmt"
	"strconv"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
)

// editHeader starts the document EditableYAML returns, like kubectl edit's.
const editHeader = `# Please edit the object below. Lines beginning with a '#' will be ignored,
# and an empty file will abort the edit. If nothing is changed, nothing is
# written.
#
# This edit goes straight to etcd: no admission, no defaulting and no
# validation beyond the API types. apiVersion, kind, metadata.name,
# metadata.namespace and metadata.uid cannot change; metadata.resourceVersion
# is ignored. metadata.managedFields are not shown and are kept.
#
`

// EditableYAML renders the object for editing in $EDITOR, as `kubectl edit`
// does: a comment header, then the object's YAML with
// metadata.resourceVersion set to the key's mod revision and without
// managedFields. Pass the edited text to ParseEdited and the result to
// Replace.
func EditableYAML(cur *kubevalue.Current) ([]byte, error) {
	content := codec.CopyContent(cur.Obj.Content)
	if md := codec.MetadataOf(content); md != nil {
		delete(md, "managedFields")
		md["resourceVersion"] = strconv.FormatInt(cur.KV.ModRevision, 10)
	}
	y, err := codec.YAML(content)
	if err != nil {
		return nil, fmt.Errorf("render %s for editing: %w", cur.KV.Key, err)
	}
	var buf bytes.Buffer
	buf.WriteString(editHeader)
	if cur.Obj.Typed == nil && len(cur.Obj.Undecoded) > 0 {
		fmt.Fprintf(&buf, "# %s is not in this build's scheme: only its metadata is shown and can\n# be edited; every other field is kept as stored.\n#\n", cur.Obj.GVK)
	}
	buf.Write(y)
	return buf.Bytes(), nil
}

// ParseEdited parses an edited document as `kubectl edit` does: comment
// lines are ignored, and a document with nothing but comments and
// whitespace abandons the edit (ErrEmptyEdit). An unchanged document gives
// content that Replace turns into no change.
func ParseEdited(doc []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("parse edited object: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, fmt.Errorf("parse edited object: %w; edit cancelled, nothing written", ErrEmptyEdit)
	}
	content := map[string]any{}
	if err := utiljson.Unmarshal(js, &content); err != nil {
		return nil, fmt.Errorf("parse edited object: not a single object: %w", err)
	}
	return content, nil
}
