package surgery

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/etcdpvc/etcdpvc/codec"
)

// Sentinel errors of edits the tool refuses before writing anything.
var (
	// ErrInvalid means an edit would leave metadata (labels, annotations,
	// finalizers, ownerReferences) that the apiserver's own validation
	// rejects: every later update of the object through the API would
	// fail. The error carries the apiserver's message.
	ErrInvalid = errors.New("the apiserver would reject the object")
	// ErrNotApplicable means an edit names something the object does not
	// have or is not in: a finalizer, label or annotation to remove that
	// is absent, a label or annotation to set that already has another
	// value (without Overwrite), an undelete of an object not being
	// deleted. Such an edit is a typo or names the wrong object.
	ErrNotApplicable = errors.New("the edit does not apply to the object")
)

// metaErrors validates the metadata the apiserver checks on every create
// and update, with apimachinery's own functions: labels, annotations,
// finalizers and ownerReferences.
func metaErrors(m *metav1.ObjectMeta) field.ErrorList {
	if m == nil {
		return nil
	}
	p := field.NewPath("metadata")
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
	errs = append(errs, apivalidation.ValidateFinalizers(m.Finalizers, p.Child("finalizers"))...)
	errs = append(errs, apivalidation.ValidateOwnerReferences(m.OwnerReferences, p.Child("ownerReferences"))...)
	return errs
}

// listIndex matches the list indices of a field path ("[2]"), which move
// when an edit removes an earlier entry.
var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// errorKey identifies a validation error independently of its list index,
// so that an error the object already had is recognised after an edit
// removed an entry before it.
func errorKey(e *field.Error) string {
	bad := ""
	if s, ok := e.BadValue.(string); ok {
		bad = s
	}
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s", e.Type, listIndex.ReplaceAllString(e.Field, "[]"), e.Detail, bad)
}

// validateMetaChange validates after's metadata as the apiserver would and
// splits the errors into those the edit introduced (not in before) and
// those that remain from before. Only introduced errors refuse an edit, so
// that an object that is already invalid can still be repaired.
func validateMetaChange(before, after *metav1.ObjectMeta) (introduced, remaining field.ErrorList) {
	had := map[string]int{}
	for _, e := range metaErrors(before) {
		had[errorKey(e)]++
	}
	for _, e := range metaErrors(after) {
		k := errorKey(e)
		if had[k] > 0 {
			had[k]--
			remaining = append(remaining, e)
			continue
		}
		introduced = append(introduced, e)
	}
	return introduced, remaining
}

// checkMeta refuses, with ErrInvalid and the apiserver's message, an edit
// from before to after that introduces invalid metadata. It returns a
// warning (or "") when after's metadata is still invalid in ways it already
// was before.
func checkMeta(before, after *codec.Object) (warning string, err error) {
	introduced, remaining := validateMetaChange(before.Meta, after.Meta)
	if len(introduced) > 0 {
		return "", &invalidError{what: objectName(after), errs: introduced}
	}
	if len(remaining) > 0 {
		return fmt.Sprintf("the metadata of %s was already invalid and still is: %s; the apiserver refuses every update of it until that is fixed",
			objectName(after), remaining.ToAggregate()), nil
	}
	return "", nil
}

// invalidError is the apiserver's "is invalid" message for an edit that
// introduces invalid metadata. It matches ErrInvalid.
type invalidError struct {
	what string
	errs field.ErrorList
}

func (e *invalidError) Error() string {
	return fmt.Sprintf("%s is invalid: %s; nothing written", e.what, e.errs.ToAggregate())
}

// Is reports whether target is ErrInvalid.
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// objectName names an object as kubectl does in messages:
// "persistentvolumeclaim www-web-0 in namespace demo".
func objectName(o *codec.Object) string {
	s := strings.ToLower(o.GVK.Kind) + " " + o.Meta.Name
	if o.Meta.Namespace != "" {
		s += " in namespace " + o.Meta.Namespace
	}
	return s
}

// notApplicable returns an error matching ErrNotApplicable: what the edit
// names that the object does not allow, after the object's name.
func notApplicable(o *codec.Object, problems []string) error {
	return &notApplicableError{msg: fmt.Sprintf("%s: %s; nothing written", objectName(o), strings.Join(problems, "; "))}
}

type notApplicableError struct{ msg string }

func (e *notApplicableError) Error() string { return e.msg }

// Is reports whether target is ErrNotApplicable.
func (e *notApplicableError) Is(target error) bool { return target == ErrNotApplicable }
