// k8s-check validates deploy/k8s offline: no cluster, no schema download.
//
// Every document is strict-decoded into the typed objects of k8s.io/api (the
// versions pinned in go.mod): an unknown or misspelt field, a duplicate key or
// a value of the wrong type is an error, as is a kind the checker does not
// know. Then checks.go checks what a schema cannot: selectors select the pod
// templates, ports are named and Services reach them, images are pinned,
// resources are set, volumes and Secrets exist, pods run as non-root.
//
// Usage: go run . DIR   (DIR holds kustomization.yaml; DIR/tools/*.yaml are
// checked as standalone manifests).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Kustomization is the subset of kustomize's file this repository uses;
// anything else in it is an unknown field, so an option the checker does
// not apply cannot slip by.
type Kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
}

// Object is one decoded manifest and where it came from.
type Object struct {
	Source string // file:document
	Obj    runtime.Object
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, networkingv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// strict decodes JSON into v, rejecting unknown fields, duplicate keys and
// case-mismatched names (the API server's own strict decoding).
func strict(data []byte, v any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return errors.Join(strictErrs...)
	}
	return nil
}

// splitDocs splits a YAML stream on "---" lines, dropping empty documents.
func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur.Bytes()))) > 0 {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); bytes.Equal(t, []byte("---")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// DecodeFile strict-decodes every document of one manifest file.
func DecodeFile(path string) ([]Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []Object
	for i, doc := range splitDocs(data) {
		src := fmt.Sprintf("%s:%d", path, i+1)
		obj, err := decodeDoc(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		objs = append(objs, Object{Source: src, Obj: obj})
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: no documents", path)
	}
	return objs, nil
}

func decodeDoc(doc []byte) (runtime.Object, error) {
	// YAMLToJSONStrict also rejects duplicate keys within a mapping.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil || tm.APIVersion == "" || tm.Kind == "" {
		return nil, fmt.Errorf("apiVersion %q / kind %q: missing or malformed", tm.APIVersion, tm.Kind)
	}
	obj, err := scheme.New(gv.WithKind(tm.Kind))
	if err != nil {
		return nil, fmt.Errorf("unknown kind %s %s (the checker knows core/v1, apps/v1, batch/v1, networking.k8s.io/v1)", tm.APIVersion, tm.Kind)
	}
	if err := strict(js, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return obj, nil
}

// LoadDir reads DIR/kustomization.yaml, its resources and DIR/tools/*.yaml.
func LoadDir(dir string) (*Kustomization, []Object, []Object, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, nil, nil, err
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kustomization.yaml: %w", err)
	}
	var k Kustomization
	if err := strict(js, &k); err != nil {
		return nil, nil, nil, fmt.Errorf("kustomization.yaml: %w", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return nil, nil, nil, fmt.Errorf("kustomization.yaml: apiVersion/kind %s/%s", k.APIVersion, k.Kind)
	}
	// Every manifest beside the kustomization must be one of its resources:
	// a file added but not listed would never be applied.
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[filepath.Clean(r)] = true
	}
	top, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range top {
		base := filepath.Base(f)
		if base != "kustomization.yaml" && !listed[base] {
			return nil, nil, nil, fmt.Errorf("%s is not listed in kustomization.yaml's resources", f)
		}
	}
	var objs []Object
	for _, r := range k.Resources {
		o, err := DecodeFile(filepath.Join(dir, r))
		if err != nil {
			return nil, nil, nil, err
		}
		objs = append(objs, o...)
	}
	var tools []Object
	extra, _ := filepath.Glob(filepath.Join(dir, "tools", "*.yaml"))
	sort.Strings(extra)
	for _, f := range extra {
		o, err := DecodeFile(f)
		if err != nil {
			return nil, nil, nil, err
		}
		tools = append(tools, o...)
	}
	return &k, objs, tools, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: k8s-check DIR")
		os.Exit(2)
	}
	k, objs, tools, err := LoadDir(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s-check:", err)
		os.Exit(1)
	}
	problems := Check(k, objs, tools)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "k8s-check:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	var kinds []string
	for _, o := range append(objs, tools...) {
		kinds = append(kinds, o.Obj.GetObjectKind().GroupVersionKind().Kind)
	}
	fmt.Printf("k8s-check: %d manifests valid (%s)\n", len(kinds), strings.Join(kinds, ", "))
}
