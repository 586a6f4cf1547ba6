package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const manifests = "../k8s"

// run copies deploy/k8s to a temporary directory, applies edit to one file
// (which must change it) and returns the load error or the problems.
func run(t *testing.T, file, old, new string) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(manifests, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(manifests, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == file {
			edited := strings.Replace(string(data), old, new, 1)
			if edited == string(data) {
				t.Fatalf("%s: %q not found", file, old)
			}
			data = []byte(edited)
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	k, objs, tools, err := LoadDir(dir)
	if err != nil {
		return err.Error()
	}
	return strings.Join(Check(k, objs, tools), "\n")
}

func TestRepositoryManifestsAreValid(t *testing.T) {
	k, objs, tools, err := LoadDir(manifests)
	if err != nil {
		t.Fatal(err)
	}
	if p := Check(k, objs, tools); len(p) > 0 {
		t.Fatalf("problems:\n%s", strings.Join(p, "\n"))
	}
	kinds := map[string]int{}
	for _, o := range append(objs, tools...) {
		kinds[o.Obj.GetObjectKind().GroupVersionKind().Kind]++
	}
	// Two agent Deployments and the server's; their Services; the driver.
	if kinds["Deployment"] != 3 || kinds["Service"] != 3 || kinds["Job"] != 1 || kinds["PersistentVolumeClaim"] != 1 || kinds["NetworkPolicy"] != 1 {
		t.Fatalf("unexpected set of objects: %v", kinds)
	}
}

// Each case breaks one thing in a copy of the real manifests; the checker
// must name it.
func TestBrokenManifestsAreRejected(t *testing.T) {
	cases := []struct{ name, file, old, new, want string }{
		{"unknown field", "agents.yaml", "replicas: 1", "replica: 1", `unknown field "spec.replica"`},
		{"field in the wrong case", "bench-job.yaml", "backoffLimit: 0", "BackoffLimit: 0", "BackoffLimit"},
		{"wrong type", "serve.yaml", "replicas: 2", "replicas: two", "replicas"},
		{"duplicate key", "serve.yaml", "  replicas: 2\n", "  replicas: 2\n  replicas: 3\n", "replicas"},
		{"unknown kind", "namespace.yaml", "kind: Namespace", "kind: Namespaces", "unknown kind"},
		{"selector mismatch", "serve.yaml", "    matchLabels:\n      app.kubernetes.io/name: quark-serve", "    matchLabels:\n      app.kubernetes.io/name: quark-serv", "does not match the pod template"},
		{"no requests", "bench-job.yaml", "              cpu: 250m\n", "", "no cpu request"},
		{"limit below request", "bench-job.yaml", "              cpu: \"1\"\n", "              cpu: 100m\n", "cpu limit 100m below its request 250m"},
		{"no memory limit", "serve.yaml", "            limits:\n              memory: 1Gi\n", "", "no memory limit"},
		{"unnamed port", "serve.yaml", "            - name: h3\n              containerPort", "            - containerPort", "has no name"},
		{"service protocol mismatch", "serve.yaml", "      targetPort: h3\n      protocol: UDP", "      targetPort: h3\n      protocol: TCP", "reaches no TCP port"},
		{"service selects nothing", "agents.yaml", "    app.kubernetes.io/instance: a\n  ports:", "    app.kubernetes.io/instance: c\n  ports:", "matches no workload"},
		{"probe on a missing port", "agents.yaml", "              port: control", "              port: controls", "no TCP port"},
		{"agents not spread by zone", "agents.yaml", "topologyKey: topology.kubernetes.io/zone", "topologyKey: kubernetes.io/hostname", "topology.kubernetes.io/zone"},
		{"unpinned image", "bench-job.yaml", "image: quark:0.1.0", "image: quark", "not pinned"},
		{"undefined secret", "agents.yaml", "secretName: quark-agent-token", "secretName: quark-token", `Secret "quark-token"`},
		{"undefined claim", "tools/results-reader.yaml", "claimName: quark-bench-results", "claimName: results", `PVC "results"`},
		{"secret unreadable", "agents.yaml", "defaultMode: 0440", "defaultMode: 0400", "unreadable by user 65532"},
		{"policy peer selects nothing", "agents.yaml", "app.kubernetes.io/name: quark-bench", "app.kubernetes.io/name: quark-benh", "matches no workload"},
		{"root allowed", "bench-job.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot"},
		{"file not in the kustomization", "kustomization.yaml", "  - serve.yaml\n", "", "serve.yaml is not listed"},
		{"unknown kustomize option", "kustomization.yaml", "namespace: quark", "namespace: quark\ncommonLabels: {a: b}", "commonLabels"},
		{"other namespace", "serve.yaml", "metadata:\n  name: quark-serve-www\n", "metadata:\n  name: quark-serve-www\n  namespace: default\n", "differs from the kustomization"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, tc.file, tc.old, tc.new)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("want an error containing %q, got:\n%s", tc.want, got)
			}
		})
	}
}
