# nodewright — common tasks. `make test` sets everything up itself.

SHELL := /usr/bin/env bash -o pipefail
GOLANGCI_LINT_VERSION := v2.15.0
LINT := bin/golangci-lint-$(GOLANGCI_LINT_VERSION)

.PHONY: all build release docs test e2e-moto generate verify lint controlplane clean bench bench-e2e bench-reference bench-reference-speed crash sim image chart fuzz faults boot boot-golden reference-newest catalog stored repair-policies dynamic-drift conversion

all: build

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/nodewright/nodewright/internal/version.version=$(VERSION) -X github.com/nodewright/nodewright/internal/version.commit=$(COMMIT)

build: ## Build the nodewright CLI into ./bin/nodewright and the controller image's binary into ./bin/nodewright-controller
	go build -ldflags "$(LDFLAGS)" -o bin/nodewright ./cmd/nodewright
	go build -ldflags "$(LDFLAGS)" -o bin/nodewright-controller ./cmd/nodewright-controller

RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

release: ## Build the CLI for RELEASE_PLATFORMS into bin/release/nodewright-VERSION-OS-ARCH.tar.gz, with SHA256SUMS
	rm -rf bin/release && mkdir -p bin/release
	for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; dir=bin/release/nodewright-$(VERSION)-$$os-$$arch; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "$(LDFLAGS)" -o $$dir/nodewright ./cmd/nodewright && \
		tar -C bin/release -czf $$dir.tar.gz $$(basename $$dir) && rm -rf $$dir || exit 1; \
	done
	cd bin/release && sha256sum *.tar.gz > SHA256SUMS

docs: ## Write docs/reference from the code (commands and flags, metrics, doctor codes, chart values)
	go test ./cmd/nodewright -run 'TestReferenceIsCurrent' -count=1 -update-docs

sim: build controlplane ## Set up, then run nodewright end to end on this machine (SCENARIO=healthy|s1..s5|windows|...)
	./bin/nodewright sim --scenario $(or $(SCENARIO),healthy)

controlplane: ## Build etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kubectl from their modules (cached)
	./hack/controlplane.sh

test: ## Set up the control plane if needed, then run every test with the race detector (the boot models' agreement with the real components printed)
	assets="$$(./hack/controlplane.sh)" && KUBEBUILDER_ASSETS="$$assets" go test -race -count=1 -timeout 50m $$(go list ./... | grep -v /internal/aws/boot/)
	go test -race -count=1 -timeout 20m -v ./internal/aws/boot/... | grep -E '^(--- FAIL|FAIL|ok|panic)|agree|^\s+\S+_test.go' 

e2e-moto: controlplane ## Run every end-to-end test against moto (moto_server on PATH), the longer ones too
	assets="$$(./hack/controlplane.sh)" && KUBEBUILDER_ASSETS="$$assets" NODEWRIGHT_E2E_MOTO=all \
		go test -count=1 -timeout 30m -run 'Moto' -v ./test/e2e/ | grep -v '^=== RUN'

generate: ## Regenerate deepcopy functions and CRDs from the API types
	go tool controller-gen object paths=./api/... crd:crdVersions=v1 output:crd:artifacts:config=api/crds
	go run ./hack/crdpatch api/crds
	go run ./hack/awsnames > internal/sim/cloud/awsapi/ec2names.go
	go run ./hack/prices > internal/aws/instancetypes/prices.json.new && mv internal/aws/instancetypes/prices.json.new internal/aws/instancetypes/prices.json
	go run ./hack/rbacrules > internal/operator/rbac/rules.json
	go run ./hack/cloudformation > docs/cloudformation.yaml
	rm -f charts/nodewright/crds/*.yaml && cp api/crds/*.yaml charts/nodewright/crds/

verify: generate chart ## Fail when generated code or CRDs are stale, go.mod is untidy or the chart does not lint
	go mod tidy
	@if [ -n "$$(git status --porcelain -- api go.mod go.sum internal/sim/cloud/awsapi internal/aws/instancetypes/prices.json internal/operator/rbac/rules.json charts docs/cloudformation.yaml)" ]; then \
		echo "generated files or go.mod are stale; run 'make generate' and 'go mod tidy' and commit:"; \
		git status --porcelain -- api go.mod go.sum internal/sim/cloud/awsapi internal/aws/instancetypes/prices.json internal/operator/rbac/rules.json charts docs/cloudformation.yaml; git --no-pager diff --stat -- api go.mod go.sum internal/sim/cloud/awsapi internal/aws/instancetypes/prices.json internal/operator/rbac/rules.json charts docs/cloudformation.yaml; exit 1; fi

# The chart's version is VERSION without its leading v when that is a
# semantic version (v0.2.0 -> 0.2.0), else 0.0.0-dev-VERSION (characters
# a version cannot hold made dashes).
CHART_VERSION ?= $(shell v='$(VERSION)'; v=$${v#v}; if echo "$$v" | grep -Eq '^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$$'; then echo "$$v"; else echo "0.0.0-dev-$$(printf %s "$$v" | tr -c '0-9A-Za-z-' '-')"; fi)

chart: ## helm lint and helm template the chart, then package it into bin/chart/nodewright-CHART_VERSION.tgz with appVersion VERSION (helm pinned in go.mod)
	go tool helm lint --strict charts/nodewright --set settings.clusterName=example --set image.repository=registry.example/nodewright
	go tool helm template nodewright charts/nodewright --namespace nodewright --kube-version 1.34.0 \
		--set settings.clusterName=example --set image.repository=registry.example/nodewright >/dev/null
	mkdir -p bin/chart && go tool helm package charts/nodewright --version $(CHART_VERSION) --app-version $(VERSION) --destination bin/chart

image: ## Build the OCI image (linux/amd64 and arm64) into bin/image, without a container daemon or base image
	go run ./hack/image -out bin/image -version $(VERSION) -commit $(COMMIT)

$(LINT):
	GOBIN=$(CURDIR)/bin go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv bin/golangci-lint $(LINT)

lint: $(LINT) ## Run golangci-lint with .golangci.yml
	$(LINT) run ./...

clean:
	rm -rf bin/nodewright

bench: ## Measure the scheduler on workloads A and B (pods/s, nodes, $/h, peak memory, cost ratio)
	go build -o bin/bench ./hack/bench && ./bin/bench

BENCH_E2E_PODS ?= 1000 10000 50000

BENCH_E2E_FLAGS ?=

bench-e2e: build controlplane ## Per size of BENCH_E2E_PODS: nodewright's time to every pod Running against the nodes-already-there baseline, and its costs (BENCH_E2E_FLAGS: -busy, -no-aws-limits)
	go build -o bin/benche2e ./hack/benche2e
	./bin/benche2e -nodewright bin/nodewright -pods "$$(echo $(BENCH_E2E_PODS) | tr ' ' ,)" $(BENCH_E2E_FLAGS)

BENCH_REFERENCE_FLAGS ?=

bench-reference: build controlplane ## nodewright and the reference autoscaler (its KWOK provider, built from its module) on nodewright's catalog, side by side per workload: $$/h, nodes, time, provisioning and consolidation after a scale-down (BENCH_REFERENCE_FLAGS: -runs, -workloads, -quiet)
	./hack/reference/build.sh
	go build -o bin/benchref ./hack/benchref
	./bin/benchref -nodewright bin/nodewright -reference bin/reference $(BENCH_REFERENCE_FLAGS)

bench-reference-speed: build controlplane ## bench-e2e with the reference autoscaler (its own catalog) on the same control plane and workload beside nodewright's runs
	./hack/reference/build.sh
	go build -o bin/benche2e ./hack/benche2e
	./bin/benche2e -nodewright bin/nodewright -pods "$$(echo $(BENCH_E2E_PODS) | tr ' ' ,)" -reference bin/reference $(BENCH_E2E_FLAGS)

CRASH_KILLS ?= 200

crash: controlplane ## Kill the controller process CRASH_KILLS times (SIGKILL) during scale-up, launches, drains and consolidation, then check nothing leaked or launched twice
	assets="$$(./hack/controlplane.sh)" && KUBEBUILDER_ASSETS="$$assets" NODEWRIGHT_CRASH_KILLS=$(CRASH_KILLS) \
		go test -count=1 -timeout 90m -run TestCrashCampaign -v ./test/e2e/ | grep -v '^=== RUN'

FUZZ_TIME ?= 60s
FUZZ_CORPUS ?= $(CURDIR)/bin/fuzz-corpus
FUZZ_TARGETS := ./internal/scheduling:FuzzSolve ./internal/aws/boot/cloudinit:FuzzSplit ./internal/aws/boot/cloudinit:FuzzRead \
	./internal/aws/boot/al2023:FuzzBootAL2023 ./internal/aws/userdata:FuzzValidate ./internal/aws/interruption:FuzzParse \
	./internal/tools/whatif:FuzzLoad ./internal/state:FuzzClaimSelectors ./internal/aws/boot/al2:FuzzBootAL2 ./internal/aws/boot/bottlerocket:FuzzBoot

catalog: ## Regenerate the embedded instance type catalog: EC2's DescribeInstanceTypes records (as moto keeps them; pip install 'moto[server]') and the reference's published network tables, then the price table for its types
	go run ./hack/catalog
	go run ./hack/prices > internal/aws/instancetypes/prices.json.new && mv internal/aws/instancetypes/prices.json.new internal/aws/instancetypes/prices.json

reference-newest: ## Check nodewright against the newest release of the reference the Go module proxy serves (its CRDs, examples, instance type computation and device records), and say what changed from the pinned one
	@newest=$$(cd /tmp && GOTOOLCHAIN=go1.27.3 GOFLAGS=-mod=mod go list -m -versions github.com/aws/karpenter-provider-aws | tr ' ' '\n' | tail -1); \
	pinned=$$(sed -n 's/.*NODEWRIGHT_REFERENCE"), "\(v[0-9.]*\)").*/\1/p' internal/referencetest/module.go); \
	echo "newest release $$newest, pinned $$pinned"; \
	NODEWRIGHT_REFERENCE=$$newest go test -count=1 -run 'TestCRDsAreTheReferences|TestDevicesAreTheReferences|TestInstanceTypesAsTheReferenceComputesThem|TestWellKnownLabelsAdmitTheReferencesTypes|TestReferenceExamples' \
		./api/crds ./internal/aws/instancetypes ./internal/tools/whatif

BOOT_CASES ?= 5000
boot: ## Run BOOT_CASES generated user data through the boot models and the real components (bash, bootstrap.sh's and nodeadm's outcomes, the kubelet's flag handling) and print the agreement
	NODEWRIGHT_BOOT_CASES=$(BOOT_CASES) go test -count=1 -timeout 60m -v -run 'TestGenerated' ./internal/aws/boot/... | grep -E '^(--- FAIL|FAIL|ok|panic)|agree|^\s+\S+_test.go'

STORED_PODS ?= 5000
stored: controlplane ## Create STORED_PODS generated pods (dry run) in kube-apiserver and check the offline tools read their requests as it stores them
	assets="$$(./hack/controlplane.sh)" && KUBEBUILDER_ASSETS="$$assets" NODEWRIGHT_STORED_PODS=$(STORED_PODS) go test -count=1 -timeout 30m -v -run 'TestRequestsAsTheAPIServerStoresThem' ./internal/scheduling | grep -E '^(--- FAIL|FAIL|ok|panic)|generated pods|stored_test.go'

REPAIR_POLICY_CASES ?= 20000
repair-policies: ## Run REPAIR_POLICY_CASES generated repair policy sets and nodes through nodewright's matcher and the reference's (built from its module) and print the agreement
	REPAIR_POLICY_CASES=$(REPAIR_POLICY_CASES) go test -count=1 -timeout 30m -v -run 'TestPoliciesDecideAsTheReference' ./internal/state/nodepoolhealth | grep -E '^(--- FAIL|FAIL|ok|panic)|cases:|case [0-9]+:'

DYNAMIC_DRIFT_CASES ?= 20000
CONVERT_CASES ?= 6000
conversion: ## Run CONVERT_CASES generated v1beta1 objects through nodewright's conversion and the reference's v1.0.8 conversion webhook code (built from its modules) and print the agreement
	CONVERT_CASES=$(CONVERT_CASES) go test -count=1 -timeout 30m -v -run 'TestConversionAsTheReference' ./internal/convert | grep -E '^(--- FAIL|FAIL|ok|panic)|objects:|case [0-9]+'

dynamic-drift: ## Run DYNAMIC_DRIFT_CASES generated NodeClaims through nodewright's drift and the reference's NodeClaim disruption controller and AWS cloud provider (built from their modules) and print the agreement
	DYNAMIC_DRIFT_CASES=$(DYNAMIC_DRIFT_CASES) go test -count=1 -timeout 30m -v -run 'TestDynamicDriftAsTheReference' ./internal/aws/nodeclass | grep -E '^(--- FAIL|FAIL|ok|panic)|NodeClaims:|case [0-9]+:'

BOOTSTRAP_SH ?=
NODEADM_SRC ?=
boot-golden: ## Write again what is generated from the real components: the kubelet's flag table, the real AL2 bootstrap.sh's outcomes (BOOTSTRAP_SH=amazon-eks-ami's templates/al2/runtime/bootstrap.sh, commit 41298160) and current nodeadm's (NODEADM_SRC=amazon-eks-ami's nodeadm folder) on the generated inputs
	@test -n "$(BOOTSTRAP_SH)" || { echo "set BOOTSTRAP_SH to amazon-eks-ami's templates/al2/runtime/bootstrap.sh (git show 41298160:templates/al2/runtime/bootstrap.sh)"; exit 1; }
	NODEWRIGHT_UPDATE_GOLDEN=1 go test -count=1 -run TestFlagsAreTheKubelets ./internal/aws/boot/kubelet/
	@test -n "$(NODEADM_SRC)" || { echo "set NODEADM_SRC to the nodeadm folder of an amazon-eks-ami checkout (github.com/awslabs/amazon-eks-ami)"; exit 1; }
	NODEWRIGHT_BOOT_CASES=$(BOOT_CASES) NODEWRIGHT_BOOTSTRAP_SH=$(abspath $(BOOTSTRAP_SH)) go test -count=1 -timeout 60m -run TestGeneratedAL2UserData ./internal/aws/boot/al2/
	probe="$$(NODEADM_SRC=$(abspath $(NODEADM_SRC)) ./hack/nodeadm-probe.sh)" && NODEWRIGHT_BOOT_CASES=$(BOOT_CASES) NODEWRIGHT_NODEADM_PROBE="$$probe" \
		go test -count=1 -timeout 60m -run TestGeneratedAL2023 ./internal/aws/boot/al2023/

fuzz: ## Run every fuzz target as a fuzzer for FUZZ_TIME each, keeping what it finds in FUZZ_CORPUS (a failing input is written to the package's testdata/fuzz, which plain go test replays)
	for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZ_TIME))"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_TIME) $$pkg -test.fuzzcachedir=$(FUZZ_CORPUS) || exit 1; \
	done

faults: controlplane ## The fault suites: EC2 eventual consistency, partial fleets, an EC2 that finds nothing, two replicas failing over, the control plane restarted and slowed
	assets="$$(./hack/controlplane.sh)" && KUBEBUILDER_ASSETS="$$assets" NODEWRIGHT_E2E_FAULTS=1 \
		go test -count=1 -timeout 60m -run 'TestEC2|TestFailover|TestControlPlane' -v ./test/e2e/ | grep -v '^=== RUN'
