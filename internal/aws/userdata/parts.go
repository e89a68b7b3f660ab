// Package userdata reads EC2 user data as a node would and finds the ways
// it can keep a node from registering as nodewright expects: the S1 and S3
// field reports and their relatives.
package userdata

import "github.com/nodewright/nodewright/internal/aws/boot/cloudinit"

// Content types of the documents user data can hold.
const (
	ContentTypeShell    = cloudinit.ContentTypeShell
	ContentTypeNodeadm  = cloudinit.ContentTypeNodeadm
	ContentTypeTOML     = cloudinit.ContentTypeTOML
	ContentTypeCloudCfg = cloudinit.ContentTypeCloudCfg
	ContentTypeText     = cloudinit.ContentTypeText
)

// Part is one document of user data.
type Part = cloudinit.Part

// Split returns the documents of user data as cloud-init reads them.
func Split(data []byte) ([]Part, error) { return cloudinit.Split(data) }

func sniff(data []byte) string       { return cloudinit.Sniff(data) }
func looksLikeMIME(data []byte) bool { return cloudinit.LooksLikeMIME(data) }
