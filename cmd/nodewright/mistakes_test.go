package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exitOf is the exit status main gives a command's error.
func exitOf(err error) int {
	var problem found
	switch {
	case err == nil:
		return 0
	case errors.As(err, &problem):
		return 2
	}
	return 1
}

const mistakeClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-orders-eu
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: orders-eu}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: orders-eu}}]
`

const mistakePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`

// Input mistakes users make, each with the exact error (or the finding)
// and the exit status doctor gives it.
func TestInputMistakes(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		args        []string
		// exit is the exit status; message the error's text (exit 1) or
		// a fragment of the output (exit 0 and 2).
		exit    int
		message string
	}{
		{name: "a misspelt kind beside valid objects", exit: 1,
			input:   "apiVersion: karpenter.sh/v1\nkind: NodePoool\nmetadata: {name: default}\nspec: {}\n---\n" + mistakeClass,
			message: `in.yaml:2: NodePoool default: karpenter.sh has no kind NodePoool (kubectl apply refuses it: no matches for kind "NodePoool" in version "karpenter.sh/v1"): did you mean NodePool?`},
		{name: "a kind of the other API group", exit: 1,
			input:   strings.Replace(mistakeClass, "karpenter.k8s.aws/v1", "karpenter.sh/v1", 1),
			message: "in.yaml:2: EC2NodeClass default: kind EC2NodeClass is in API group karpenter.k8s.aws, not karpenter.sh: set apiVersion: karpenter.k8s.aws/v1"},
		{name: "two objects joined without ---", exit: 1,
			input:   mistakeClass + mistakePool,
			message: `in.yaml:9: yaml: key "apiVersion" again in the same document: two objects are joined without a "---" line between them, and the first would be lost; put "---" on the line before this object's apiVersion`},
		{name: "a field given twice", exit: 1,
			input:   mistakeClass + "  role: KarpenterNodeRole-other\n",
			message: `in.yaml:9: yaml: key "role" is given twice in the same map (kubectl apply refuses it, and which one was meant is not nodewright's to guess): keep one`},
		{name: "a misspelt field, at its own line", exit: 1,
			input:   mistakeClass + "  blockDeviceMappings:\n    - deviceName: /dev/xvda\n      ebs: {volumeSize: 100Gi, volumType: gp3}\n",
			message: `in.yaml:11: decoding EC2NodeClass default: strict decoding error: unknown field "spec.blockDeviceMappings[0].ebs.volumType" (spec.blockDeviceMappings[0].ebs.volumType: did you mean volumeType?)`},
		{name: "a misspelt NodePool field", exit: 1,
			input:   mistakeClass + "---\n" + strings.Replace(mistakePool, "      requirements: []\n", "      requirements: []\n      expireAfer: 720h\n", 1),
			message: `in.yaml:18: decoding NodePool default: strict decoding error: unknown field "spec.template.spec.expireAfer" (spec.template.spec.expireAfer: did you mean expireAfter?)`},
		{name: "a value the API server refuses, at its field's line", exit: 1,
			input:   mistakeClass + "---\n" + mistakePool + "  disruption:\n    consolidateAfter: 10x\n",
			message: `in.yaml:19: NodePool.karpenter.sh "default" is invalid: spec.disruption.consolidateAfter: Invalid value: "10x": spec.disruption.consolidateAfter in body should match '^(([0-9]+(s|m|h))+|Never)$' (spec.disruption.consolidateAfter takes a duration such as 30s, 15m or 720h, or Never)`},
		{name: "an apiVersion no release served", exit: 1,
			input:   strings.Replace(mistakePool, "karpenter.sh/v1", "karpenter.sh/v2", 1),
			message: "in.yaml:1: NodePool default: apiVersion karpenter.sh/v2 is not one nodewright reads (karpenter.sh/v1)"},
		{name: "a field an older API's term never had, at its line", exit: 1,
			input:   "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata: {name: old}\nspec:\n  amiFamily: AL2\n  role: KarpenterNodeRole-orders-eu\n  subnetSelectorTerms:\n    - name: private-a\n  securityGroupSelectorTerms: [{tags: {a: b}}]\n",
			message: `in.yaml:8: EC2NodeClass old (karpenter.k8s.aws/v1beta1): strict decoding error: unknown field "spec.subnetSelectorTerms[0].name" (a field the older API did not have)`},
		{name: "a refused file with -o json is JSON", exit: 1, args: []string{"-o", "json"},
			input:   "apiVersion: karpenter.sh/v1\nkind: NodePoool\nmetadata: {name: default}\n",
			message: `"code": "input-refused"`},
		{name: "an alias with a second @", exit: 2,
			input:   strings.Replace(mistakeClass, "al2023@latest", "al2023@latest@foo", 1) + "---\n" + mistakePool,
			message: "ERROR  ami-alias-malformed  EC2NodeClass/default  (in.yaml:1)"},
		{name: "the registration taint as a startup taint", exit: 0,
			input:   mistakeClass + "---\n" + mistakePool + "      startupTaints: [{key: karpenter.sh/unregistered, effect: NoExecute}]\n",
			message: "WARNING  startup-taint-is-registration-taint  NodePool/default  (in.yaml:10)"},
		{name: "a limit below zero", exit: 2,
			input:   mistakeClass + "---\n" + mistakePool + "  limits: {cpu: \"-4\"}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: web, image: nginx, resources: {requests: {cpu: \"1\"}}}]}\n",
			message: "set NodePool default's spec.limits to 0 or more (a limit below zero admits no node), or remove the limit"},
		{name: "v1beta1 beside a v1 NodePool with its own fault", exit: 2,
			input: "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: old}\nspec:\n  template:\n    spec:\n      nodeClassRef: {name: default}\n      requirements: []\n---\n" +
				mistakeClass + "---\n" + strings.Replace(mistakePool, "name: default}\n      requirements", "name: general}\n      requirements", 1),
			message: "ERROR  nodeclass-not-found  NodePool/default  (in.yaml:19)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "in.yaml"), []byte(tc.input), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			cmd := newRootCommand()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&bytes.Buffer{})
			cmd.SetArgs(append([]string{"doctor", "-f", "in.yaml"}, tc.args...))
			err := cmd.Execute()
			if got := exitOf(err); got != tc.exit {
				t.Fatalf("exit status %d, want %d (%v)\n%s", got, tc.exit, err, out.String())
			}
			switch {
			case len(tc.args) > 0:
				var report struct {
					Findings []struct {
						Code, File string
						Line       int
					}
				}
				if jerr := json.Unmarshal(out.Bytes(), &report); jerr != nil || len(report.Findings) != 1 || report.Findings[0].File != "in.yaml" || report.Findings[0].Line != 2 {
					t.Errorf("-o json on a refused file printed %s (%v)", out.String(), jerr)
				}
				fallthrough
			case tc.exit != 1:
				if !strings.Contains(out.String(), tc.message) {
					t.Errorf("the output lacks %q:\n%s", tc.message, out.String())
				}
			default:
				if err.Error() != tc.message {
					t.Errorf("error\n%s\nwant\n%s", err, tc.message)
				}
			}
		})
	}
}
