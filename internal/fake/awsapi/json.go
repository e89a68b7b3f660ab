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
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		return float64(t.UnixNano()) / 1e9
	case v.Kind() == reflect.Struct:
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
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	case v.Kind() == reflect.Slice:
		if v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range v.Len() {
			out[i] = jsonValue(v.Index(i), lowerCamel)
		}
		return out
	case v.Kind() == reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[k.String()] = jsonValue(v.MapIndex(k), lowerCamel)
		}
		return out
	case v.Kind() == reflect.String:
		return v.String()
	}
	return v.Interface()
}
