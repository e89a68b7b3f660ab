package al2023

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"path"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Group, Version and Kind of the NodeConfig nodeadm reads: v1alpha1 is
// the one version its scheme registers.
var gvk = schema.GroupVersionKind{Group: "node.eks.aws", Version: "v1alpha1", Kind: "NodeConfig"}

// MediaType is the MIME type of a NodeConfig part.
const MediaType = "application/node.eks.aws"

// NodeConfig is nodeadm's NodeConfig in the shape of its v1alpha1 JSON
// (the fields nodewright reads, and the others with their types, so a
// value of the wrong type fails to decode as it does for nodeadm).
type NodeConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              NodeConfigSpec `json:"spec,omitempty"`
}

// NodeConfigSpec is a NodeConfig's spec.
type NodeConfigSpec struct {
	Cluster struct {
		Name                 string `json:"name,omitempty"`
		APIServerEndpoint    string `json:"apiServerEndpoint,omitempty"`
		CertificateAuthority []byte `json:"certificateAuthority,omitempty"`
		CIDR                 string `json:"cidr,omitempty"`
		EnableOutpost        *bool  `json:"enableOutpost,omitempty"`
		ID                   string `json:"id,omitempty"`
	} `json:"cluster,omitempty"`
	Containerd struct {
		Config          string                          `json:"config,omitempty"`
		BaseRuntimeSpec map[string]runtime.RawExtension `json:"baseRuntimeSpec,omitempty"`
	} `json:"containerd,omitempty"`
	Instance struct {
		LocalStorage struct {
			Strategy       string `json:"strategy,omitempty"`
			MountPath      string `json:"mountPath,omitempty"`
			DisabledMounts []struct {
				Path string `json:"path,omitempty"`
			} `json:"disabledMounts,omitempty"`
		} `json:"localStorage,omitempty"`
		Environment map[string]map[string]string `json:"environment,omitempty"`
		Network     struct {
			Nameservers []string `json:"nameservers,omitempty"`
			Domains     []string `json:"domains,omitempty"`
		} `json:"network,omitempty"`
	} `json:"instance,omitempty"`
	Kubelet struct {
		Config            map[string]runtime.RawExtension `json:"config,omitempty"`
		Flags             []string                        `json:"flags,omitempty"`
		MaxPodsExpression string                          `json:"maxPodsExpression,omitempty"`
	} `json:"kubelet,omitempty"`
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// DeepCopyObject makes NodeConfig a runtime.Object (the decoder's copy is
// not used).
func (n *NodeConfig) DeepCopyObject() runtime.Object {
	out := *n
	return &out
}

var codecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gvk, &NodeConfig{})
	return serializer.NewCodecFactory(scheme)
}()

// Errors of nodeadm's user data reading that its chain of sources passes
// over (it goes on to the next source).
var (
	errNoConfig = errors.New("could not find NodeConfig within UserData")
	errDecode   = errors.New("failed to decode node config")
)

// decode decodes one NodeConfig document as nodeadm does: the
// apimachinery decoder for the registered version (YAML or JSON, its
// first document; apiVersion and kind required), then the kind and group
// checked.
func decode(data []byte) (*NodeConfig, error) {
	obj, got, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w, %w", errDecode, err)
	}
	if got.Kind != gvk.Kind {
		return nil, fmt.Errorf("failed to decode %q (wrong Kind)", got.Kind)
	}
	if got.Group != gvk.Group {
		return nil, fmt.Errorf("failed to decode %q, unexpected group: %s", got.Kind, got.Group)
	}
	nc, ok := obj.(*NodeConfig)
	if !ok {
		return nil, fmt.Errorf("unable to convert %T to NodeConfig", obj)
	}
	return nc, nil
}

// Unwrap undoes base64 (when the whole data decodes as base64) and gzip
// (when it starts with gzip's magic number), as nodeadm does to user data
// and to each NodeConfig part.
func Unwrap(data []byte) ([]byte, error) {
	decoded := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	if n, err := base64.StdEncoding.Decode(decoded, data); err == nil {
		data = decoded[:n]
	}
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("failed to create GZIP reader: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("failed to read from GZIP reader: %w", err)
	}
	return out, nil
}

// parse reads a document as nodeadm's ParseMaybeMultipart: a MIME
// multipart document's top-level parts of the NodeConfig type, each
// unwrapped and decoded, merged in order; anything else decoded whole.
func parse(data []byte) (*NodeConfig, error) {
	reader, err := multipartReader(data)
	if err != nil {
		return decode(data)
	}
	var configs []*NodeConfig
	for {
		part, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		header := part.Header.Get("Content-Type")
		if header == "" {
			continue
		}
		mediaType, _, err := mime.ParseMediaType(header)
		if err != nil {
			return nil, err
		}
		if mediaType != MediaType {
			continue
		}
		body, err := io.ReadAll(io.LimitReader(part, 16<<20))
		if err != nil {
			return nil, err
		}
		if body, err = Unwrap(body); err != nil {
			return nil, err
		}
		nc, err := decode(body)
		if err != nil {
			return nil, err
		}
		configs = append(configs, nc)
	}
	if len(configs) == 0 {
		return nil, errNoConfig
	}
	return merge(configs)
}

func multipartReader(data []byte) (*multipart.Reader, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, errors.New("MIME type is not multipart")
	}
	return multipart.NewReader(msg.Body, params["boundary"]), nil
}

// source is one of nodeadm's configuration sources.
type source func() (*NodeConfig, error)

// errUserDataDecode is a user data NodeConfig that does not decode, which
// the chain passes over (a drop-in that does not decode fails it).
var errUserDataDecode = errors.New("the user data's NodeConfig does not decode")

// userDataSource is imds://user-data.
func userDataSource(userData []byte) source {
	return func() (*NodeConfig, error) {
		data, err := Unwrap(userData)
		if err != nil {
			return nil, fmt.Errorf("failed to decompress user data: %w", err)
		}
		nc, err := parse(data)
		if errors.Is(err, errDecode) {
			return nil, fmt.Errorf("%w: %w", errUserDataDecode, err)
		}
		return nc, err
	}
}

// errNoConfigInDirectory is the directory source's "nothing here".
var errNoConfigInDirectory = errors.New("no config found in directory")

// dropInSource is file:///etc/eks/nodeadm.d/: its .yaml, .yml and .json
// files in name order, each read as a document, merged.
func dropInSource(files map[string][]byte) source {
	return func() (*NodeConfig, error) {
		var names []string
		for p := range files {
			dir, name := path.Split(p)
			lower := strings.ToLower(name)
			if dir == DropInDir+"/" && (strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".json")) {
				names = append(names, p)
			}
		}
		if len(names) == 0 {
			return nil, errNoConfigInDirectory
		}
		slices.Sort(names)
		configs := make([]*NodeConfig, 0, len(names))
		for _, p := range names {
			nc, err := parse(files[p])
			if errors.Is(err, errNoConfig) {
				err = errors.New("could not find NodeConfig") // not passed over in a file
			}
			if err != nil {
				return nil, fmt.Errorf("failed to parse config file %s: %w", path.Base(p), err)
			}
			configs = append(configs, nc)
		}
		return merge(configs)
	}
}

// validate is nodeadm's check of the merged configuration before either
// phase goes on: the cluster's name, endpoint, CA and service CIDR, and an
// outpost's cluster ID.
func validate(nc *NodeConfig) error {
	c := nc.Spec.Cluster
	switch {
	case c.Name == "":
		return errors.New("name is missing in cluster configuration (spec.cluster.name)")
	case c.APIServerEndpoint == "":
		return errors.New("apiserver endpoint is missing in cluster configuration (spec.cluster.apiServerEndpoint)")
	case c.CertificateAuthority == nil:
		return errors.New("certificate authority is missing in cluster configuration (spec.cluster.certificateAuthority)")
	case c.CIDR == "":
		return errors.New("CIDR is missing in cluster configuration (spec.cluster.cidr)")
	case c.EnableOutpost != nil && *c.EnableOutpost && c.ID == "":
		return errors.New("cluster ID must be provided for outposts (spec.cluster.id)")
	}
	return nil
}

// read is a phase's configuration: its chain, then validate.
func read(sources ...source) (*NodeConfig, error) {
	nc, err := chain(sources...)
	if err != nil {
		return nil, err
	}
	if err := validate(nc); err != nil {
		return nil, err
	}
	return nc, nil
}

// DropInDir is where nodeadm's run phase reads drop-in NodeConfigs.
const DropInDir = "/etc/eks/nodeadm.d"

// chain reads the sources in order as nodeadm's chain does: a source with
// nothing (no NodeConfig in the user data, one that does not decode, an
// empty directory) is passed over; any other failure fails the chain;
// what the sources give is merged.
func chain(sources ...source) (*NodeConfig, error) {
	var configs []*NodeConfig
	for i, s := range sources {
		nc, err := s()
		switch {
		case errors.Is(err, errNoConfig), errors.Is(err, errUserDataDecode), errors.Is(err, errNoConfigInDirectory):
			continue
		case err != nil:
			return nil, fmt.Errorf("config provider at index %d failed: %w", i, err)
		}
		configs = append(configs, nc)
	}
	if len(configs) == 0 {
		return nil, errors.New("no config in chain")
	}
	return merge(configs)
}

// merge merges NodeConfigs in order as nodeadm does: a later non-empty
// value overrides, structures merge field by field, kubelet flags are
// appended, and the kubelet configuration documents merge deeply (maps
// merged, anything else replaced by a later non-empty value).
func merge(configs []*NodeConfig) (*NodeConfig, error) {
	out := &NodeConfig{}
	kubelet := map[string]any{}
	for _, nc := range configs {
		flags := slices.Concat(out.Spec.Kubelet.Flags, nc.Spec.Kubelet.Flags)
		mergeValue(reflect.ValueOf(&out.Spec).Elem(), reflect.ValueOf(nc.Spec))
		out.Spec.Kubelet.Flags = flags
		doc, err := document(nc.Spec.Kubelet.Config)
		if err != nil {
			return nil, err
		}
		mergeMaps(kubelet, doc)
	}
	out.Spec.Kubelet.Flags = slices.Clip(out.Spec.Kubelet.Flags)
	out.Spec.Kubelet.Config = map[string]runtime.RawExtension{}
	for k, v := range kubelet {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out.Spec.Kubelet.Config[k] = runtime.RawExtension{Raw: raw}
	}
	return out, nil
}

// document is an inline document as a map.
func document(raw map[string]runtime.RawExtension) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range raw {
		var value any
		if err := json.Unmarshal(v.Raw, &value); err != nil {
			return nil, fmt.Errorf("spec.kubelet.config.%s: %w", k, err)
		}
		out[k] = value
	}
	return out, nil
}

// mergeMaps merges src into dst: maps deeply, any other value (an empty
// list included) replacing.
func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// mergeValue merges the fields of src into dst (structs field by field,
// maps key by key, other non-empty values replacing); the kubelet's
// flags and configuration are merged by merge.
func mergeValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			mergeValue(dst.Field(i), src.Field(i))
		}
	case reflect.Map:
		if src.Len() == 0 || src.Type() == reflect.TypeOf(map[string]runtime.RawExtension{}) {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(src.Type()))
		}
		for _, k := range src.MapKeys() {
			dst.SetMapIndex(k, src.MapIndex(k))
		}
	default:
		if !src.IsZero() && dst.CanSet() {
			dst.Set(src)
		}
	}
}

// unread names the NodeConfigs in user data that nodeadm never reads: a
// later YAML document of a NodeConfig part (or of the whole user data),
// and a part of a nested multipart, which nodeadm does not walk.
func unread(userData []byte) []string {
	data, err := Unwrap(userData)
	if err != nil {
		return nil
	}
	reader, err := multipartReader(data)
	if err != nil {
		return laterDocuments("the user data", data)
	}
	var out []string
	for i := 1; ; i++ {
		part, err := reader.NextPart()
		if err != nil {
			return out
		}
		mediaType, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		body, err := io.ReadAll(io.LimitReader(part, 16<<20))
		if err != nil {
			return out
		}
		switch {
		case mediaType == MediaType:
			if body, err = Unwrap(body); err == nil {
				out = append(out, laterDocuments(fmt.Sprintf("MIME part %d", i), body)...)
			}
		case strings.HasPrefix(mediaType, "multipart/") && bytes.Contains(body, []byte(gvk.Group+"/")):
			out = append(out, fmt.Sprintf("MIME part %d is a nested %s holding a NodeConfig, which nodeadm never reads: it reads only the top-level parts", i, mediaType))
		}
	}
}

// laterDocuments names the YAML documents after the first that hold a
// NodeConfig: nodeadm decodes only a part's first document.
func laterDocuments(where string, body []byte) []string {
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(body)))
	var out []string
	for i := 1; ; i++ {
		doc, err := docs.Read()
		if err != nil {
			return out
		}
		if i > 1 && bytes.Contains(doc, []byte("NodeConfig")) {
			out = append(out, fmt.Sprintf("%s, YAML document %d, is a NodeConfig nodeadm never reads: it decodes only a part's first document", where, i))
		}
	}
}
