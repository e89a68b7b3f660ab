#!/usr/bin/env bash
# Start moto_server (an AWS implementation: pip install 'moto[server]') on
# 127.0.0.1:PORT and set it up as the account of an EKS cluster named
# nodewright-sim, for `nodewright sim --aws-endpoint`: the cluster, a VPC
# with three subnets and a security group tagged karpenter.sh/discovery,
# the node role, and a copy of the al2023 alias's SSM parameters under
# /moto/aws/service (moto refuses parameters under /aws/). Then:
#
#   nodewright sim --aws-endpoint http://127.0.0.1:5000 --ami-alias-parameter-root /moto/aws/service
set -euo pipefail
port="${1:-5000}"
endpoint="http://127.0.0.1:$port"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1 AWS_ENDPOINT_URL="$endpoint"
MOTO_ACCOUNT_ID=111122223333 moto_server -H 127.0.0.1 -p "$port" >/tmp/moto-"$port".log 2>&1 &
for _ in $(seq 150); do curl -sf "$endpoint/moto-api/" >/dev/null && break; sleep 0.2; done
curl -sf "$endpoint/moto-api/" >/dev/null || { echo "moto_server did not start: see /tmp/moto-$port.log" >&2; exit 1; }
tag='Key=karpenter.sh/discovery,Value=nodewright-sim'
vpc=$(aws ec2 create-vpc --cidr-block 10.0.0.0/16 --query Vpc.VpcId --output text)
subnets=()
i=0
for zone in us-east-1a us-east-1b us-east-1c; do
  subnets+=("$(aws ec2 create-subnet --vpc-id "$vpc" --availability-zone "$zone" --cidr-block "10.0.$((i * 16)).0/20" \
    --tag-specifications "ResourceType=subnet,Tags=[{$tag}]" --query Subnet.SubnetId --output text)")
  i=$((i + 1))
done
aws ec2 create-security-group --group-name nodes --description nodes --vpc-id "$vpc" \
  --tag-specifications "ResourceType=security-group,Tags=[{$tag}]" >/dev/null
aws iam create-role --role-name KarpenterNodeRole-nodewright-sim \
  --assume-role-policy-document '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}' >/dev/null
aws eks create-cluster --name nodewright-sim --kubernetes-version 1.34 --role-arn arn:aws:iam::111122223333:role/eks-cluster \
  --resources-vpc-config "subnetIds=${subnets[0]},${subnets[1]},${subnets[2]}" >/dev/null
# moto's own Amazon Linux images, as the EKS-optimized AMIs.
for arch in x86_64:ami-076f415166b04f5fe arm64:ami-0e9271c829888680e; do
  aws ssm put-parameter --type String --name "/moto/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/${arch%%:*}/standard/recommended/image_id" \
    --value "${arch##*:}" >/dev/null
done
echo "moto_server at $endpoint (log /tmp/moto-$port.log), set up as nodewright-sim's account"
