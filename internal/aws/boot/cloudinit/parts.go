// Package cloudinit reads EC2 user data into its documents as cloud-init
// does: a MIME multipart document's parts (nested multiparts flattened,
// base64 and gzip undone), or the whole data as one document whose type
// is recognised from its first line.
package cloudinit

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"strings"
)

// Content types of the documents user data can hold.
const (
	ContentTypeShell    = "text/x-shellscript"
	ContentTypeNodeadm  = "application/node.eks.aws"
	ContentTypeTOML     = "application/toml"
	ContentTypeCloudCfg = "text/cloud-config"
	ContentTypeText     = "text/plain"
)

// Part is one document of user data.
type Part struct {
	ContentType string
	Body        []byte
	// Filename is the name cloud-init writes the part under (Read only).
	Filename string
}

// maxDepth bounds nested multipart documents.
const maxDepth = 8

// Split returns the documents of user data: the parts of a MIME multipart
// document (nested multiparts flattened, in order), or the whole data as one
// part whose type is recognised from its content.
func Split(data []byte) ([]Part, error) {
	return split(data, 0)
}

func split(data []byte, depth int) ([]Part, error) {
	if depth > maxDepth {
		return nil, errors.New("MIME documents nested too deeply")
	}
	if !LooksLikeMIME(data) {
		return []Part{{ContentType: Sniff(data), Body: data}}, nil
	}
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading MIME headers: %w", err)
	}
	body, err := decodeBody(msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	if err != nil {
		return nil, err
	}
	return splitEntity(msg.Header.Get("Content-Type"), body, depth)
}

// splitEntity splits a MIME entity of the content type into its leaf
// parts; a non-multipart entity is one part.
func splitEntity(contentType string, body []byte, depth int) ([]Part, error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return []Part{{ContentType: Sniff(body), Body: body}}, nil //nolint:nilerr // an unreadable type is sniffed instead
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return []Part{{ContentType: mediaType, Body: body}}, nil
	}
	return splitMultipart(mediaType, params["boundary"], body, depth)
}

// splitMultipart splits a multipart body into the leaf parts of its parts,
// in order.
func splitMultipart(mediaType, boundary string, body []byte, depth int) ([]Part, error) {
	if boundary == "" {
		return nil, fmt.Errorf("%s document without a boundary", mediaType)
	}
	reader := multipart.NewReader(bytes.NewReader(body), boundary)
	var out []Part
	for {
		part, err := reader.NextRawPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(out)+1, err)
		}
		nested, err := splitPart(part, len(out)+1, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, nested...)
	}
}

// splitPart decodes the n-th part of a multipart body and splits it in
// turn; a part without a content type has it sniffed.
func splitPart(part *multipart.Part, n, depth int) ([]Part, error) {
	raw, err := io.ReadAll(part)
	if err != nil {
		return nil, fmt.Errorf("reading MIME part %d: %w", n, err)
	}
	decoded, err := decodeBody(part.Header.Get("Content-Transfer-Encoding"), bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	ct := part.Header.Get("Content-Type")
	if ct == "" {
		ct = Sniff(decoded)
	}
	return splitEntity(ct, decoded, depth+1)
}

func decodeBody(encoding string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(strings.TrimSpace(encoding), "base64") {
		out, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(data)), ""))
		if err != nil {
			return nil, fmt.Errorf("decoding a base64 MIME part: %w", err)
		}
		return out, nil
	}
	return data, nil
}

// LooksLikeMIME reports data that starts with MIME headers.
func LooksLikeMIME(data []byte) bool {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	header, err := r.ReadMIMEHeader()
	if err != nil && len(header) == 0 {
		return false
	}
	return header.Get("Mime-Version") != "" || strings.HasPrefix(strings.ToLower(header.Get("Content-Type")), "multipart/")
}

// Type is the type cloud-init runs a part as: a text/plain part is typed
// by its first line (cloud-init types text/plain parts by what they start
// with), any other keeps its Content-Type.
func Type(p Part) string {
	if p.ContentType == ContentTypeText {
		return Sniff(p.Body)
	}
	return p.ContentType
}

// Sniff recognises a document by its content.
func Sniff(data []byte) string {
	text := strings.TrimSpace(string(data))
	switch {
	case strings.HasPrefix(text, "#!"):
		return ContentTypeShell
	case strings.HasPrefix(text, "#cloud-config"):
		return ContentTypeCloudCfg
	case strings.Contains(text, "node.eks.aws/") && strings.Contains(text, "NodeConfig"):
		return ContentTypeNodeadm
	case strings.HasPrefix(text, "[") || strings.Contains(text, "[settings"):
		return ContentTypeTOML
	}
	return ContentTypeText
}
