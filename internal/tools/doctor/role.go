package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
)

// The aws-auth mapping every node role needs.
const (
	nodeUsername      = "system:node:{{EC2PrivateDNSName}}"
	accessEntryLinux  = "EC2_LINUX"
	accountIDUnknown  = "<account-id>"
	awsAuthObjectName = "ConfigMap/kube-system/aws-auth"
)

var nodeGroups = []string{"system:bootstrappers", "system:nodes"}

type roleMapping struct {
	RoleARN  string   `json:"rolearn"`
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

// nodeRoleRule checks that each EC2NodeClass's node role may join the
// cluster: mapped in aws-auth with the node groups and username, or an
// EC2_LINUX access entry.
func nodeRoleRule(ctx context.Context, r *Report, in Input) error {
	mappings, ok := awsAuthMappings(r, in.Objects.AWSAuth)
	if !ok {
		return nil
	}
	prefix := iamPrefixOf(in.Cloud, mappings)
	for _, nc := range in.Objects.EC2NodeClasses {
		checkNodeRole(ctx, r, in, nc, mappings, prefix)
	}
	return nil
}

// awsAuthMappings reads aws-auth's role mappings; none when there is no
// aws-auth. False when data.mapRoles cannot be read: that is the finding,
// and no role can be checked against it.
func awsAuthMappings(r *Report, awsAuth *corev1.ConfigMap) ([]roleMapping, bool) {
	if awsAuth == nil {
		return nil, true
	}
	var mappings []roleMapping
	if err := yaml.Unmarshal([]byte(awsAuth.Data["mapRoles"]), &mappings); err != nil {
		r.add(Finding{Code: CodeNodeRoleNotMapped, Severity: Error, Object: awsAuthObjectName,
			Message:  "data.mapRoles is not a YAML list of role mappings, so it maps no role and no node can register: " + err.Error(),
			Evidence: "data.mapRoles: " + firstLine(awsAuth.Data["mapRoles"]),
			Fix:      "make data.mapRoles a YAML list of entries with rolearn, username and groups"})
		return nil, false
	}
	return mappings, true
}

// nodeRoleCheck is what the findings about one EC2NodeClass's node role
// are made of.
type nodeRoleCheck struct {
	class *awsv1.EC2NodeClass
	// windows: the class launches Windows nodes.
	windows bool
	role    string
	arn     string
	obj     string
	fix     string
	// entriesKnown is set when the account could say whether the role has
	// an access entry; entryNote says what it found.
	entriesKnown bool
	entryNote    string
	// entriesWhy says why the access entries are not known.
	entriesWhy string
}

// checkNodeRole reports an EC2NodeClass whose node role may not join the
// cluster.
func checkNodeRole(ctx context.Context, r *Report, in Input, nc *awsv1.EC2NodeClass, mappings []roleMapping, prefix string) {
	chk, ok := roleToCheck(ctx, r, in, nc, prefix)
	if !ok {
		return
	}
	if in.Objects.AWSAuth == nil {
		noAWSAuthRule(r, chk)
		return
	}
	found := &Report{}
	exact, pathed, others := roleMappingOf(mappings, chk.role)
	switch {
	case exact != nil:
		incompleteMappingRule(found, chk, exact)
	case pathed != nil:
		pathedMappingRule(found, chk, pathed)
	default:
		unmappedRoleRule(ctx, found, in, chk, mappings, others)
	}
	for _, f := range found.Findings {
		if f.Code == CodeNodeRoleNotMapped && !chk.entriesKnown {
			f = qualifiedByAccessEntries(f, chk, registeredClaimOf(in, nc))
		}
		r.add(f)
	}
}

// qualifiedByAccessEntries says of a finding on aws-auth that the
// access entries were not read: an EC2_LINUX (or EC2_WINDOWS) entry of
// the role admits its nodes whatever aws-auth says. Where a NodeClaim of
// the class has registered, something admits the role: then it is a
// warning, not an error.
func qualifiedByAccessEntries(f Finding, chk nodeRoleCheck, registered string) Finding {
	f.Message += fmt.Sprintf(" — unless an EKS access entry admits the role: access entries were not read (%s)", chk.entriesWhy)
	if chk.entriesWhy == entriesNotGiven {
		f.Fix += "\nIf the cluster's authentication mode is API or API_AND_CONFIG_MAP, check its access entries: nodewright doctor --cloud aws --cluster-name CLUSTER"
	}
	if registered != "" {
		f.Severity = Warning
		f.Message += fmt.Sprintf("; NodeClaim %s of EC2NodeClass %s has registered, so something admits the role, most likely an access entry", registered, chk.class.Name)
		f.Evidence += fmt.Sprintf("; NodeClaim %s: Registered=True", registered)
	}
	return f
}

// registeredClaimOf is a NodeClaim launched from the EC2NodeClass as it
// is now (its hash, which covers spec.role, is the class's) that has
// registered, empty when there is none: one launched before the role
// changed says nothing of the new role.
func registeredClaimOf(in Input, nc *awsv1.EC2NodeClass) string {
	hash := nodeclass.Hash(nc)
	for _, c := range in.Objects.NodeClaims {
		if c.Spec.NodeClassRef != nil && c.Spec.NodeClassRef.Name == nc.Name && c.Annotations[nodeclass.AnnotationHash] == hash &&
			meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionRegistered) {
			return c.Name
		}
	}
	return ""
}

// roleToCheck reads an EC2NodeClass's node role and its EKS access entry.
// False when there is nothing to check: the role is unknown, or an
// EC2_LINUX access entry lets its nodes join whatever aws-auth says.
func roleToCheck(ctx context.Context, r *Report, in Input, nc *awsv1.EC2NodeClass, prefix string) (nodeRoleCheck, bool) {
	role, err := nodeRole(ctx, r, in.Cloud, nc)
	if err != nil {
		r.add(checkFailed("EC2NodeClass/"+nc.Name, "the role of EC2NodeClass "+nc.Name+"'s instance profile", "iam:GetInstanceProfile", err))
		return nodeRoleCheck{}, false
	}
	if role == "" {
		return nodeRoleCheck{}, false
	}
	arn := prefix + ":role/" + role
	if iamARN.MatchString(role) {
		// An ARN where the name belongs (node-identity-not-a-name): the
		// mapping is checked for the role it names, never a nested ARN.
		arn, role = role, roleName(role)
	}
	entryType, entryErr := accessEntryType(ctx, in.Cloud, arn)
	if entryErr != nil {
		r.add(checkFailed("EC2NodeClass/"+nc.Name, "the EKS access entry of node role "+role, "eks:DescribeAccessEntry on cluster "+in.Cloud.ClusterName+
			"'s access entries (a cluster in CONFIG_MAP authentication mode has none: aws-auth alone decides, and is checked)", entryErr))
	}
	windows, _ := instancetypes.WindowsOf(nc)
	if entryType == accessEntryLinux || entryType == accessEntryWindows {
		if f, ok := windowsRoleFinding(nodeRoleCheck{class: nc, role: role, arn: arn, obj: "EC2NodeClass/" + nc.Name}, nil, entryType); ok {
			r.add(f)
		}
		return nodeRoleCheck{}, false
	}
	entry := accessEntryLinux
	if windows {
		entry = accessEntryWindows
	}
	entriesKnown := in.Cloud != nil && in.Cloud.AccessEntries != nil && entryErr == nil
	return nodeRoleCheck{class: nc, role: role, obj: "EC2NodeClass/" + nc.Name, windows: windows,
		arn:          arn,
		fix:          fmt.Sprintf("add to data.mapRoles of ConfigMap kube-system/aws-auth:\n%s\n(or create an EKS access entry of type %s for %s)", mappingYAML(arn, windows), entry, arn),
		entriesKnown: entriesKnown, entryNote: accessEntryNote(entryType, entry, entriesKnown), entriesWhy: entriesWhy(in.Cloud, entryErr)}, true
}

// entriesNotGiven: no account was given to read access entries from.
const entriesNotGiven = "no account was given (--cloud)"

// entriesWhy says why a node role's access entry is not known.
func entriesWhy(cloud *Cloud, err error) string {
	if cloud == nil || cloud.AccessEntries == nil {
		return entriesNotGiven
	}
	if err != nil {
		return "its EKS access entry could not be read (see check-failed)"
	}
	return ""
}

// accessEntryNote says what is known of a node role's access entry, for
// the findings' messages.
func accessEntryNote(entryType, want string, entriesKnown bool) string {
	switch {
	case entryType != "":
		return fmt.Sprintf("; its EKS access entry is of type %s, but nodes need type %s", entryType, want)
	case entriesKnown:
		return "; it has no EKS access entry either"
	}
	return ""
}

// noAWSAuthRule reports a node role when there is no aws-auth to map it:
// an error when the account says it has no access entry either, else a
// note that it could not be checked.
func noAWSAuthRule(r *Report, chk nodeRoleCheck) {
	if !chk.entriesKnown {
		r.add(Finding{Code: CodeNotChecked, Severity: Info, Object: chk.obj,
			Message:  fmt.Sprintf("whether node role %s may join the cluster is not checked: the aws-auth ConfigMap is not among the inputs and %s; unmapped, its nodes' kubelets get Unauthorized and never register", chk.role, chk.entriesWhy),
			Evidence: "no ConfigMap kube-system/aws-auth among the inputs; " + chk.entriesWhy,
			Fix:      "add it with -f (kubectl -n kube-system get configmap aws-auth -o yaml | nodewright doctor -f - -f ...), run doctor against the cluster, or give --cloud aws --cluster-name CLUSTER to read the access entries; nodes need:\n" + chk.fix})
		return
	}
	r.add(Finding{Code: CodeNodeRoleNotMapped, Severity: Error, Object: chk.obj,
		Message:  fmt.Sprintf("node role %s of EC2NodeClass %s is not in aws-auth (there is no aws-auth ConfigMap)%s, so its nodes' kubelets get Unauthorized and never register", chk.role, chk.class.Name, chk.entryNote),
		Evidence: "no ConfigMap kube-system/aws-auth" + chk.entryNote, Fix: chk.fix})
}

// roleMappingOf finds the aws-auth mapping of a role (the last, if there
// are several): exact, by the role's ARN without an IAM path, which is
// how EKS matches it; pathed, by an ARN with a path
// (role/eks/nodes/NAME), which EKS never matches; and the names of the
// other roles mapped with group system:nodes.
func roleMappingOf(mappings []roleMapping, role string) (exact, pathed *roleMapping, others []string) {
	for i, m := range mappings {
		_, rest, ok := strings.Cut(m.RoleARN, ":role/")
		switch {
		case ok && rest == role:
			exact = &mappings[i]
		case ok && strings.HasSuffix(rest, "/"+role):
			pathed = &mappings[i]
		case slices.Contains(m.Groups, "system:nodes"):
			others = append(others, m.RoleARN[strings.LastIndex(m.RoleARN, "/")+1:])
		}
	}
	return exact, pathed, others
}

// pathedMappingRule reports a node role aws-auth maps by an ARN with its
// IAM path: EKS compares the ARN the node authenticates with, which has
// no path, so the entry never matches and nodes get Unauthorized.
func pathedMappingRule(r *Report, chk nodeRoleCheck, pathed *roleMapping) {
	r.add(Finding{Code: CodeNodeRoleNotMapped, Severity: Error, Object: chk.obj,
		Message: fmt.Sprintf("aws-auth maps node role %s as %s, with its IAM path: EKS matches a role by its ARN without the path, so the entry never matches, and the nodes' kubelets get Unauthorized and never register%s",
			chk.role, pathed.RoleARN, chk.entryNote),
		Evidence: fmt.Sprintf("aws-auth mapRoles entry rolearn: %s", pathed.RoleARN),
		Fix:      fmt.Sprintf("in data.mapRoles of ConfigMap kube-system/aws-auth, replace rolearn: %s with rolearn: %s (the same role, without the path)", pathed.RoleARN, chk.arn)})
}

// unmappedRoleRule reports a node role aws-auth does not map, with what
// the console of one of the EC2NodeClass's unregistered instances says.
func unmappedRoleRule(ctx context.Context, r *Report, in Input, chk nodeRoleCheck, mappings []roleMapping, others []string) {
	evidence := "aws-auth mapRoles: " + strings.Join(mappedARNs(mappings), ", ")
	console, err := consoleOfUnregistered(ctx, in, func(c *v1.NodeClaim) bool {
		return c.Spec.NodeClassRef != nil && c.Spec.NodeClassRef.Name == chk.class.Name
	})
	if err != nil {
		r.add(checkFailed(chk.obj, "the console output of EC2NodeClass "+chk.class.Name+"'s unregistered instances", "ec2:GetConsoleOutput", err))
	}
	if console != "" {
		evidence += "; console of " + console
	}
	r.add(Finding{Code: CodeNodeRoleNotMapped, Severity: Error, Object: chk.obj, Message: unmappedRoleMessage(chk, others), Evidence: evidence, Fix: chk.fix})
}

// unmappedRoleMessage says that a node role is not mapped, and which node
// roles aws-auth maps instead: the controller's role there is a common
// mix-up.
func unmappedRoleMessage(chk nodeRoleCheck, others []string) string {
	msg := fmt.Sprintf("node role %s of EC2NodeClass %s is not mapped in aws-auth%s, so its nodes' kubelets get Unauthorized and never register", chk.role, chk.class.Name, chk.entryNote)
	if len(others) == 0 {
		return msg
	}
	msg += fmt.Sprintf("; aws-auth maps %s with group system:nodes instead", strings.Join(others, ", "))
	for _, other := range others {
		if strings.Contains(strings.ToLower(other), "controller") {
			msg += fmt.Sprintf(" — %s is the controller's role, not the role the nodes run with", other)
		}
	}
	return msg
}

// incompleteMappingRule reports an aws-auth mapping of a node role that
// lacks the node groups or username.
func incompleteMappingRule(r *Report, chk nodeRoleCheck, exact *roleMapping) {
	var missing []string
	for _, g := range nodeGroups {
		if !slices.Contains(exact.Groups, g) {
			missing = append(missing, "group "+g)
		}
	}
	if exact.Username != nodeUsername {
		missing = append(missing, fmt.Sprintf("username %s (it is %q)", nodeUsername, exact.Username))
	}
	if len(missing) == 0 {
		if f, ok := windowsRoleFinding(chk, exact.Groups, ""); ok {
			r.add(f)
		}
		return
	}
	r.add(Finding{Code: CodeNodeRoleNotMapped, Severity: Error, Object: chk.obj,
		Message:  fmt.Sprintf("aws-auth maps node role %s without %s, so its nodes cannot register", chk.role, strings.Join(missing, " and ")),
		Evidence: fmt.Sprintf("aws-auth mapRoles entry %s: username %q, groups %v", exact.RoleARN, exact.Username, exact.Groups),
		Fix:      "in data.mapRoles of ConfigMap kube-system/aws-auth, replace the entry of " + exact.RoleARN + " with:\n" + mappingYAML(exact.RoleARN, chk.windows)})
}

// nodeRole is the EC2NodeClass's role, or its instance profile's role
// when the account can be asked.
func nodeRole(ctx context.Context, r *Report, cloud *Cloud, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.Role != "" {
		return nc.Spec.Role, nil
	}
	if nc.Spec.InstanceProfile == nil {
		return "", nil
	}
	profile := *nc.Spec.InstanceProfile
	if cloud == nil || cloud.InstanceProfiles == nil {
		r.add(Finding{Code: CodeNotChecked, Severity: Info, Object: "EC2NodeClass/" + nc.Name,
			Message:  fmt.Sprintf("whether the node role may join the cluster is not checked: the role of instance profile %s is known only to AWS", profile),
			Evidence: fmt.Sprintf("EC2NodeClass %s spec.instanceProfile: %s", nc.Name, profile),
			Fix:      "run nodewright doctor with --cloud aws --cluster-name CLUSTER to read the instance profile's role, or set spec.role to the node role instead"})
		return "", nil
	}
	out, err := cloud.InstanceProfiles.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)})
	if err != nil {
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchEntity" {
			r.add(Finding{Code: CodeNodeRoleNotMapped, Severity: Error, Object: "EC2NodeClass/" + nc.Name,
				Message: fmt.Sprintf("instance profile %s of EC2NodeClass %s does not exist, so no node can launch with it", profile, nc.Name),
				Fix:     "create the instance profile with the node role, or set spec.role instead of spec.instanceProfile"})
			return "", nil
		}
		return "", fmt.Errorf("reading instance profile %s of EC2NodeClass %s: %w", profile, nc.Name, err)
	}
	for _, role := range out.InstanceProfile.Roles {
		return aws.ToString(role.RoleName), nil
	}
	r.add(Finding{Code: CodeNodeRoleNotMapped, Severity: Error, Object: "EC2NodeClass/" + nc.Name,
		Message: fmt.Sprintf("instance profile %s of EC2NodeClass %s has no role, so its nodes have no credentials to register with", profile, nc.Name),
		Fix:     fmt.Sprintf("aws iam add-role-to-instance-profile --instance-profile-name %s --role-name <node role>", profile)})
	return "", nil
}

// accessEntryType is the type of the principal's EKS access entry; empty
// when it has none or no account was given.
func accessEntryType(ctx context.Context, cloud *Cloud, arn string) (string, error) {
	if cloud == nil || cloud.AccessEntries == nil {
		return "", nil
	}
	out, err := cloud.AccessEntries.DescribeAccessEntry(ctx, &eks.DescribeAccessEntryInput{ClusterName: aws.String(cloud.ClusterName), PrincipalArn: aws.String(arn)})
	if err != nil {
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ResourceNotFoundException" {
			return "", nil
		}
		return "", fmt.Errorf("reading the EKS access entry of %s in cluster %s: %w", arn, cloud.ClusterName, err)
	}
	return aws.ToString(out.AccessEntry.Type), nil
}

// iamPrefixOf is the start of the IAM ARNs in fixes and lookups,
// arn:PARTITION:iam::ACCOUNT: the account's partition and ID, else those
// aws-auth's entries use, else the aws partition and a placeholder.
func iamPrefixOf(cloud *Cloud, mappings []roleMapping) string {
	partition, account := "", ""
	if cloud != nil {
		partition, account = cloud.Partition, cloud.AccountID
	}
	for _, m := range mappings {
		parts := strings.Split(m.RoleARN, ":")
		if len(parts) < 5 || parts[0] != "arn" {
			continue
		}
		if partition == "" {
			partition = parts[1]
		}
		if account == "" {
			account = parts[4]
		}
	}
	if partition == "" {
		partition = "aws"
	}
	if account == "" {
		account = accountIDUnknown
	}
	return "arn:" + partition + ":iam::" + account
}

// mappingYAML is the aws-auth entry a node role needs.
func mappingYAML(arn string, windows bool) string {
	out := fmt.Sprintf("- rolearn: %s\n  username: %s\n  groups:\n    - system:bootstrappers\n    - system:nodes", arn, nodeUsername)
	if windows {
		out += "\n    - " + windowsKubeProxyGroup
	}
	return out
}

func mappedARNs(ms []roleMapping) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.RoleARN)
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
