package awsapi

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// queryNode is a query string as a tree: "Filter.1.Value.2=x" is the
// child Filter, its child 1, its child Value, its child 2, valued x.
type queryNode struct {
	value    string
	set      bool
	children map[string]*queryNode
}

func parseQuery(values url.Values) *queryNode {
	root := &queryNode{}
	for key, vs := range values {
		n := root
		for _, part := range strings.Split(key, ".") {
			if n.children == nil {
				n.children = map[string]*queryNode{}
			}
			child := n.children[part]
			if child == nil {
				child = &queryNode{}
				n.children[part] = child
			}
			n = child
		}
		if len(vs) > 0 {
			n.value, n.set = vs[0], true
		}
	}
	return root
}

// child finds a child by name, ignoring case as the SDKs' names may
// differ in case from the model's.
func (n *queryNode) child(name string) *queryNode {
	if n == nil {
		return nil
	}
	if c, ok := n.children[name]; ok {
		return c
	}
	for k, c := range n.children {
		if strings.EqualFold(k, name) {
			return c
		}
	}
	return nil
}

// list returns the children 1, 2, ... in order.
func (n *queryNode) list() []*queryNode {
	if n == nil {
		return nil
	}
	var idx []int
	for k := range n.children {
		if i, err := strconv.Atoi(k); err == nil && i > 0 {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	out := make([]*queryNode, 0, len(idx))
	for _, i := range idx {
		out = append(out, n.children[strconv.Itoa(i)])
	}
	return out
}

// queryDialect is how a query protocol names fields and lists: EC2's
// flattens lists (Filter.1.Name) and takes names from the SDK's
// serializers; the AWS query protocol of IAM wraps them
// (Tags.member.1.Key) and names fields as Go does.
type queryDialect struct {
	names   map[string]map[string]string
	wrapped bool
}

// decodeQuery fills the struct v points at from a query request (the Go
// field name when the dialect has no other).
func decodeQuery(n *queryNode, v reflect.Value, d queryDialect) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key := f.Name
		if wire, ok := d.names[t.Name()][f.Name]; ok {
			key = wire
		}
		c := n.child(key)
		if c == nil {
			continue
		}
		if err := decodeValue(c, v.Field(i), d); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// decodeValue fills v from the query node n, in the dialect's names.
func decodeValue(n *queryNode, v reflect.Value, names queryDialect) error {
	switch v.Kind() {
	case reflect.Pointer:
		return decodePointer(n, v, names)
	case reflect.Struct:
		return decodeQuery(n, v, names)
	case reflect.Slice:
		return decodeSlice(n, v, names)
	}
	if decode, ok := scalarDecoders[v.Kind()]; ok {
		return decode(v, n.value)
	}
	return fmt.Errorf("cannot decode a %s from a query string", v.Type())
}

// decodePointer points v at a new value decoded from n; timestamps come
// in RFC 3339.
func decodePointer(n *queryNode, v reflect.Value, names queryDialect) error {
	if v.Type().Elem() == timeType {
		t, err := time.Parse(time.RFC3339, n.value)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(&t))
		return nil
	}
	p := reflect.New(v.Type().Elem())
	if err := decodeValue(n, p.Elem(), names); err != nil {
		return err
	}
	v.Set(p)
	return nil
}

// decodeSlice fills v with n's numbered children, under "member" when the
// dialect wraps lists.
func decodeSlice(n *queryNode, v reflect.Value, names queryDialect) error {
	if names.wrapped {
		n = n.child("member")
	}
	items := n.list()
	s := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, item := range items {
		if err := decodeValue(item, s.Index(i), names); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// scalarDecoders parse a query value into a value of their kind.
var scalarDecoders = map[reflect.Kind]func(reflect.Value, string) error{
	reflect.String:  decodeString,
	reflect.Bool:    decodeBool,
	reflect.Int:     decodeInt,
	reflect.Int32:   decodeInt,
	reflect.Int64:   decodeInt,
	reflect.Float32: decodeFloat,
	reflect.Float64: decodeFloat,
}

func decodeString(v reflect.Value, s string) error {
	v.SetString(s)
	return nil
}

func decodeBool(v reflect.Value, s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	v.SetBool(b)
	return nil
}

func decodeInt(v reflect.Value, s string) error {
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	v.SetInt(i)
	return nil
}

func decodeFloat(v reflect.Value, s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	v.SetFloat(x)
	return nil
}

var timeType = reflect.TypeFor[time.Time]()

// xmlWriter writes a query protocol's response: element names from the
// SDK's deserializers when it has them (else the Go field name, in
// lowerCamel for EC2), lists as an element of members (item for EC2,
// member for the AWS query protocol).
type xmlWriter struct {
	enc        *xml.Encoder
	names      map[string]map[string]string
	members    map[string]map[string]string
	member     string
	lowerCamel bool
}

// elem writes v as the element name; the elements of a list are named
// member. Nil values and maps are left out.
func (w *xmlWriter) elem(name string, v reflect.Value, member string) error {
	v, ok := deref(v)
	if !ok {
		return nil
	}
	start := xml.StartElement{Name: xml.Name{Local: name}}
	switch {
	case v.Type() == timeType:
		return w.enc.EncodeElement(v.Interface().(time.Time).UTC().Format("2006-01-02T15:04:05.000Z"), start)
	case v.Kind() == reflect.Struct:
		return w.structElem(start, v)
	case v.Kind() == reflect.Slice:
		return w.listElem(start, v, member)
	case v.Kind() == reflect.Map:
		return nil // EC2 responses nodewright reads have no maps
	}
	return w.enc.EncodeElement(fmt.Sprint(v.Interface()), start)
}

// structElem writes a struct as an element holding its fields.
func (w *xmlWriter) structElem(start xml.StartElement, v reflect.Value) error {
	if err := w.enc.EncodeToken(start); err != nil {
		return err
	}
	if err := w.fields(v); err != nil {
		return err
	}
	return w.enc.EncodeToken(start.End())
}

// listElem writes a non-empty list as an element holding one member
// element per item; an empty list is left out.
func (w *xmlWriter) listElem(start xml.StartElement, v reflect.Value, member string) error {
	if v.Len() == 0 {
		return nil
	}
	if err := w.enc.EncodeToken(start); err != nil {
		return err
	}
	for i := range v.Len() {
		if err := w.elem(member, v.Index(i), w.member); err != nil {
			return err
		}
	}
	return w.enc.EncodeToken(start.End())
}

// fields writes a struct's exported fields, ResultMetadata aside.
func (w *xmlWriter) fields(v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Name == "ResultMetadata" {
			continue
		}
		name, ok := w.names[t.Name()][f.Name]
		if !ok {
			name = f.Name
			if w.lowerCamel {
				name = lowerFirst(f.Name)
			}
		}
		member := w.member
		if m, ok := w.members[t.Name()][f.Name]; ok {
			member = m
		}
		if err := w.elem(name, v.Field(i), member); err != nil {
			return err
		}
	}
	return nil
}

func lowerFirst(s string) string {
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// writeEC2Response writes out (a *XxxOutput) as the XML body of action's
// response.
func writeEC2Response(w io.Writer, action, requestID string, out any) error {
	enc := xml.NewEncoder(w)
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: "http://ec2.amazonaws.com/doc/2016-11-15/"}}}
	if err := enc.EncodeToken(start); err != nil {
		return err
	}
	if err := enc.EncodeElement(requestID, xml.StartElement{Name: xml.Name{Local: "requestId"}}); err != nil {
		return err
	}
	xw := &xmlWriter{enc: enc, names: ec2XMLNames, members: ec2XMLMembers, member: "item", lowerCamel: true}
	if err := xw.fields(reflect.ValueOf(out).Elem()); err != nil {
		return err
	}
	if err := enc.EncodeToken(start.End()); err != nil {
		return err
	}
	return enc.Flush()
}

// writeEC2Error writes an EC2 error response.
func writeEC2Error(w io.Writer, code, message, requestID string) error {
	type errorXML struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	type response struct {
		XMLName   xml.Name   `xml:"Response"`
		Errors    []errorXML `xml:"Errors>Error"`
		RequestID string     `xml:"RequestID"`
	}
	return xml.NewEncoder(w).Encode(response{Errors: []errorXML{{Code: code, Message: message}}, RequestID: requestID})
}

// writeQueryResponse writes out (a *XxxOutput) as the XML body of an AWS
// query protocol response (IAM's).
func writeQueryResponse(w io.Writer, action, namespace, requestID string, out any) error {
	enc := xml.NewEncoder(w)
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: namespace}}}
	result := xml.StartElement{Name: xml.Name{Local: action + "Result"}}
	if err := enc.EncodeToken(start); err != nil {
		return err
	}
	if err := enc.EncodeToken(result); err != nil {
		return err
	}
	xw := &xmlWriter{enc: enc, member: "member"}
	if err := xw.fields(reflect.ValueOf(out).Elem()); err != nil {
		return err
	}
	if err := enc.EncodeToken(result.End()); err != nil {
		return err
	}
	meta := struct {
		XMLName   xml.Name `xml:"ResponseMetadata"`
		RequestID string   `xml:"RequestId"`
	}{RequestID: requestID}
	if err := enc.Encode(meta); err != nil {
		return err
	}
	if err := enc.EncodeToken(start.End()); err != nil {
		return err
	}
	return enc.Flush()
}

// writeQueryError writes an AWS query protocol error response.
func writeQueryError(w io.Writer, code, message, requestID string) error {
	type errorXML struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	type response struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Error     errorXML `xml:"Error"`
		RequestID string   `xml:"RequestId"`
	}
	return xml.NewEncoder(w).Encode(response{Error: errorXML{Type: "Sender", Code: code, Message: message}, RequestID: requestID})
}
