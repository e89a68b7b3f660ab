package awsapi

import (
	"encoding/base64"
	"reflect"
	"time"
)

// jsonValue turns an SDK value into what the AWS JSON protocols carry:
// objects keyed by the Go field name (lowerCamel for REST-JSON services),
// timestamps as epoch seconds, blobs in base64, nothing for nil.
func jsonValue(v reflect.Value, lowerCamel bool) any {
	v, ok := deref(v)
	if !ok {
		return nil
	}
	if v.Type() == timeType {
		return float64(v.Interface().(time.Time).UnixNano()) / 1e9
	}
	switch v.Kind() {
	case reflect.Struct:
		return jsonStruct(v, lowerCamel)
	case reflect.Slice:
		return jsonSlice(v, lowerCamel)
	case reflect.Map:
		return jsonMap(v, lowerCamel)
	case reflect.String:
		return v.String()
	}
	return v.Interface()
}

// deref follows pointers and interfaces to the value they hold; ok is
// false when one of them is nil.
func deref(v reflect.Value) (_ reflect.Value, ok bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return v, false
		}
		v = v.Elem()
	}
	return v, true
}

// jsonStruct is a struct's exported fields that have a value, ResultMetadata
// aside.
func jsonStruct(v reflect.Value, lowerCamel bool) any {
	out := map[string]any{}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Name == "ResultMetadata" {
			continue
		}
		x := jsonValue(v.Field(i), lowerCamel)
		if x == nil {
			continue
		}
		name := f.Name
		if lowerCamel {
			name = lowerFirst(name)
		}
		out[name] = x
	}
	return out
}

// jsonSlice is a blob in base64, or a list of the elements' values; a nil
// list is left out.
func jsonSlice(v reflect.Value, lowerCamel bool) any {
	if v.Type().Elem().Kind() == reflect.Uint8 {
		return base64.StdEncoding.EncodeToString(v.Bytes())
	}
	if v.IsNil() {
		return nil
	}
	out := make([]any, v.Len())
	for i := range v.Len() {
		out[i] = jsonValue(v.Index(i), lowerCamel)
	}
	return out
}

// jsonMap is a map as an object keyed by its string keys; a nil map is
// left out.
func jsonMap(v reflect.Value, lowerCamel bool) any {
	if v.IsNil() {
		return nil
	}
	out := map[string]any{}
	for _, k := range v.MapKeys() {
		out[k.String()] = jsonValue(v.MapIndex(k), lowerCamel)
	}
	return out
}
