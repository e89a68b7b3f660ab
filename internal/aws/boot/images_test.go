package boot

import (
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

func TestImageFamily(t *testing.T) {
	for name, want := range map[string]string{
		"amazon-eks-node-al2023-x86_64-standard-1.31-v20250123":                                      awsv1.AMIFamilyAL2023,
		"amazon-eks-node-al2023-arm64-nvidia-1.32-v20250403":                                         awsv1.AMIFamilyAL2023,
		"/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id": awsv1.AMIFamilyAL2023,
		"amazon-eks-node-1.31-v20250123":                                                             awsv1.AMIFamilyAL2,
		"amazon-eks-gpu-node-1.29-v20240917":                                                         awsv1.AMIFamilyAL2,
		"amazon-eks-arm64-node-1.30-v20241024":                                                       awsv1.AMIFamilyAL2,
		"/aws/service/eks/optimized-ami/1.29/amazon-linux-2-arm64/recommended/image_id":              awsv1.AMIFamilyAL2,
		"bottlerocket-aws-k8s-1.31-x86_64-v1.30.0-b9d2f1b5":                                          awsv1.AMIFamilyBottlerocket,
		"/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id":                               awsv1.AMIFamilyBottlerocket,
		"Windows_Server-2022-English-Core-EKS_Optimized-1.31-2025.01.15":                             awsv1.AMIFamilyWindows2022,
		"my-golden-image-2025-01":                                                                    "",
		"amazon-eks-node-al2023-ish-but-mine":                                                        awsv1.AMIFamilyAL2023,
	} {
		if got := ImageFamily(name); got != want {
			t.Errorf("ImageFamily(%q) = %q, want %q", name, got, want)
		}
	}
	if f := ImagesFamily([]string{"amazon-eks-node-1.31-v1", "amazon-eks-arm64-node-1.31-v1"}); f != awsv1.AMIFamilyAL2 {
		t.Errorf("two AL2 images: %q", f)
	}
	if f := ImagesFamily([]string{"amazon-eks-node-1.31-v1", "my-image"}); f != "" {
		t.Errorf("one image that does not say: %q", f)
	}
}
