package whatif

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodewright/nodewright/internal/convert"
)

// Conversion is an object read from an older API's document (or a v1
// object the reference's v1.0 conversion left a kubelet configuration
// on), and what its conversion changed.
type Conversion struct {
	File string
	Line int
	// Item is 1 + the index of the List item the object was, in a List
	// document (kubectl get -o yaml); 0 outside a List.
	Item int
	// Object is the v1 object's "Kind/name"; From the document's
	// apiVersion and kind.
	Object string
	From   string
	Notes  []string
}

// addConverted reads a document of an older API as the v1 objects it
// converts to, each decoded and checked as a v1 document would be.
func (o *Objects) addConverted(doc []byte, tm metav1.TypeMeta, name string) error {
	res, err := convert.Document(tm.APIVersion, tm.Kind, doc)
	if err != nil {
		return fmt.Errorf("%s %s (%s): %w", tm.Kind, name, tm.APIVersion, err)
	}
	for i, obj := range res.Objects {
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		var head struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return err
		}
		if _, err := o.decode(data, head.TypeMeta, head.Metadata.Name); err != nil {
			return fmt.Errorf("%s %s (%s) converted to %s: %w", tm.Kind, name, tm.APIVersion, head.APIVersion, err)
		}
		if err := o.remember(head.Kind, head.Metadata.Namespace, head.Metadata.Name); err != nil {
			return err
		}
		o.used++
		c := Conversion{File: o.at.file, Line: o.at.line, Item: o.at.item, Object: head.Kind + "/" + head.Metadata.Name, From: res.From + " " + name}
		if i == 0 {
			c.Notes = res.Notes
		} else {
			c.Notes = []string{"made from " + tm.Kind + " " + name + "'s spec.provider"}
		}
		o.Conversions = append(o.Conversions, c)
	}
	return nil
}

// settle moves what converted NodePools carried to their classes (see
// convert.Settle), noting it on the objects' conversions.
func (o *Objects) settle() error {
	added, notes, err := convert.Settle(o.NodePools, o.EC2NodeClasses, o.NodeClaims)
	if err != nil {
		return err
	}
	for _, c := range added {
		o.EC2NodeClasses = append(o.EC2NodeClasses, c.Class)
		if o.copies == nil {
			o.copies = map[string]string{}
		}
		o.copies[c.Class.Name] = c.Of
	}
	for _, n := range notes {
		o.conversionOf(n.Object).Notes = append(o.conversionOf(n.Object).Notes, n.Text)
	}
	return nil
}

// conversionOf is the conversion of an object, made when the object was
// read as v1.
func (o *Objects) conversionOf(object string) *Conversion {
	for i := range o.Conversions {
		if o.Conversions[i].Object == object {
			return &o.Conversions[i]
		}
	}
	o.Conversions = append(o.Conversions, Conversion{Object: object})
	return &o.Conversions[len(o.Conversions)-1]
}

// Where is the file and line an object was read from, by its
// "Kind/name" or "Kind/namespace/name" (a namespaced object given without
// a namespace is looked for in default); false for an object not read
// from a file.
func (o *Objects) Where(object string) (string, int, bool) {
	parts := strings.Split(object, "/")
	var keys []string
	switch len(parts) {
	case 2:
		keys = []string{parts[0] + "//" + parts[1], parts[0] + "/default/" + parts[1]}
	case 3:
		keys = []string{object}
	}
	for _, k := range keys {
		if p, ok := o.where[k]; ok && p.file != "" {
			return p.file, p.line, true
		}
	}
	return "", 0, false
}

// Document is a document as read (KeepDocuments).
type Document struct {
	File string
	Line int
	Body []byte
}

// ConvertedAt are the objects the document at file:line (item, 1 + its
// index in a List document, or 0) converted to, as read (settled): nil
// for a document of the current APIs.
func (o *Objects) ConvertedAt(file string, line, item int) []runtime.Object {
	var out []runtime.Object
	for _, c := range o.Conversions {
		if c.File != file || c.Line != line || c.Item != item || c.From == "" {
			continue
		}
		kind, name, _ := strings.Cut(c.Object, "/")
		out = append(out, o.object(kind, name)...)
	}
	return out
}

// object is the read object of a kind and name, and for an EC2NodeClass
// the copies Settle made of it (<name>-<nodepool>).
func (o *Objects) object(kind, name string) []runtime.Object {
	var out []runtime.Object
	switch kind {
	case "NodePool":
		for _, p := range o.NodePools {
			if p.Name == name {
				out = append(out, p)
			}
		}
	case "NodeClaim":
		for _, c := range o.NodeClaims {
			if c.Name == name {
				out = append(out, c)
			}
		}
	case "EC2NodeClass":
		for _, c := range o.EC2NodeClasses {
			if c.Name == name {
				out = append(out, c)
			}
		}
		for _, c := range o.EC2NodeClasses {
			if o.copies[c.Name] == name {
				out = append(out, c)
			}
		}
	}
	return out
}

// HasConversionsAt reports whether any item of the List document at
// file:line was converted.
func (o *Objects) HasConversionsAt(file string, line int) bool {
	for _, c := range o.Conversions {
		if c.File == file && c.Line == line && c.Item > 0 && c.From != "" {
			return true
		}
	}
	return false
}
