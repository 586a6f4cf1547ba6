package main

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ExternalSecrets are made by hand before `kubectl apply -k` (deploy/README.md
// shows the commands): a token or key must never sit in the repository.
var ExternalSecrets = map[string]bool{"quark-agent-token": true, "quark-serve-tls": true}

// ZoneKey is the label the agents must be spread over.
const ZoneKey = "topology.kubernetes.io/zone"

// workload is a pod template with what owns it.
type workload struct {
	src, kind, name string
	selector        *metav1.LabelSelector // nil for Jobs and Pods
	tmpl            corev1.PodTemplateSpec
}

type checker struct {
	problems []string
	// Names of ConfigMaps, Secrets and PVCs defined in the manifests.
	configMaps, secrets, claims map[string]bool
}

func (c *checker) fail(src, format string, args ...any) {
	c.problems = append(c.problems, src+": "+fmt.Sprintf(format, args...))
}

// Check returns every problem found; none means valid.
func Check(k *Kustomization, objs, tools []Object) []string {
	c := &checker{configMaps: map[string]bool{}, secrets: map[string]bool{}, claims: map[string]bool{}}
	all := append(append([]Object{}, objs...), tools...)
	var loads []workload
	var services, policies []Object
	names := map[string]string{}
	for _, o := range all {
		meta := o.Obj.(metav1.ObjectMetaAccessor).GetObjectMeta()
		kind := o.Obj.GetObjectKind().GroupVersionKind().Kind
		for _, e := range validation.IsDNS1123Subdomain(meta.GetName()) {
			c.fail(o.Source, "%s name %q: %s", kind, meta.GetName(), e)
		}
		if ns := meta.GetNamespace(); ns != "" && ns != k.Namespace {
			c.fail(o.Source, "namespace %q differs from the kustomization's %q", ns, k.Namespace)
		}
		key := kind + "/" + meta.GetName()
		if prev, dup := names[key]; dup {
			c.fail(o.Source, "%s also defined at %s", key, prev)
		}
		names[key] = o.Source
		switch v := o.Obj.(type) {
		case *corev1.ConfigMap:
			c.configMaps[v.Name] = true
		case *corev1.Secret:
			c.secrets[v.Name] = true
		case *corev1.PersistentVolumeClaim:
			c.claims[v.Name] = true
		case *corev1.Service:
			services = append(services, o)
		case *networkingv1.NetworkPolicy:
			policies = append(policies, o)
		case *appsv1.Deployment:
			loads = append(loads, workload{o.Source, kind, v.Name, v.Spec.Selector, v.Spec.Template})
		case *appsv1.DaemonSet:
			loads = append(loads, workload{o.Source, kind, v.Name, v.Spec.Selector, v.Spec.Template})
		case *appsv1.StatefulSet:
			loads = append(loads, workload{o.Source, kind, v.Name, v.Spec.Selector, v.Spec.Template})
		case *batchv1.Job:
			if v.Spec.Selector != nil {
				c.fail(o.Source, "Job %s: leave the selector to the API server", v.Name)
			}
			if p := v.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever && p != corev1.RestartPolicyOnFailure {
				c.fail(o.Source, "Job %s: restartPolicy must be Never or OnFailure, not %q", v.Name, p)
			}
			loads = append(loads, workload{o.Source, kind, v.Name, nil, v.Spec.Template})
		case *corev1.Pod:
			loads = append(loads, workload{o.Source, kind, v.Name, nil, corev1.PodTemplateSpec{ObjectMeta: v.ObjectMeta, Spec: v.Spec}})
		}
	}
	imageNames := map[string]bool{}
	for _, w := range loads {
		c.checkWorkload(w, imageNames)
	}
	for _, s := range services {
		c.checkService(s.Source, s.Obj.(*corev1.Service), loads)
	}
	for _, p := range policies {
		c.checkPolicy(p.Source, p.Obj.(*networkingv1.NetworkPolicy), loads)
	}
	for _, img := range k.Images {
		if !imageNames[img.Name] {
			c.fail("kustomization.yaml", "images: %q is no container's image", img.Name)
		}
	}
	return c.problems
}

func (c *checker) checkWorkload(w workload, imageNames map[string]bool) {
	src := w.src + " " + w.kind + "/" + w.name
	own := labels.Set(w.tmpl.Labels)
	if w.kind != "Job" && w.kind != "Pod" {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		switch {
		case w.selector == nil || err != nil || sel.Empty():
			c.fail(src, "selector missing, empty or invalid (%v)", err)
		case !sel.Matches(own):
			c.fail(src, "selector %s does not match the pod template's labels %v", sel, own)
		}
	}
	spec := w.tmpl.Spec
	if len(spec.Containers) == 0 {
		c.fail(src, "no containers")
	}
	c.checkSpread(src, w, own)
	c.checkVolumes(src, spec)
	c.checkSecretModes(src, spec)
	nonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	for _, ct := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		c.checkContainer(src+" container "+ct.Name, ct, nonRoot, imageNames)
	}
}

// checkSpread: every spread constraint must count the workload's own pods,
// and the lab agents must be spread across zones (the cross-zone placement).
func (c *checker) checkSpread(src string, w workload, own labels.Set) {
	zone := false
	for _, t := range w.tmpl.Spec.TopologySpreadConstraints {
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if t.LabelSelector == nil || err != nil || !sel.Matches(own) {
			c.fail(src, "topology spread on %s does not select the workload's own pods", t.TopologyKey)
		}
		if t.MaxSkew < 1 {
			c.fail(src, "topology spread maxSkew %d < 1", t.MaxSkew)
		}
		if t.TopologyKey == ZoneKey {
			zone = true
		}
	}
	if own["app.kubernetes.io/name"] == "quark-agent" && !zone {
		c.fail(src, "agents must have a topologySpreadConstraint on %s", ZoneKey)
	}
}

func (c *checker) checkVolumes(src string, spec corev1.PodSpec) {
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil:
			if !c.secrets[v.Secret.SecretName] && !ExternalSecrets[v.Secret.SecretName] {
				c.fail(src, "volume %s: Secret %q is neither defined nor a documented external one", v.Name, v.Secret.SecretName)
			}
		case v.ConfigMap != nil:
			if !c.configMaps[v.ConfigMap.Name] {
				c.fail(src, "volume %s: ConfigMap %q not defined", v.Name, v.ConfigMap.Name)
			}
		case v.PersistentVolumeClaim != nil:
			if !c.claims[v.PersistentVolumeClaim.ClaimName] {
				c.fail(src, "volume %s: PVC %q not defined", v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
}

// checkSecretModes: Secret files are root's; a non-root pod reads them only
// through fsGroup and a group-read mode (the kubelet's default is 0644).
func (c *checker) checkSecretModes(src string, spec corev1.PodSpec) {
	sc := spec.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		return
	}
	for _, v := range spec.Volumes {
		if v.Secret == nil {
			continue
		}
		mode := int32(0o644)
		if v.Secret.DefaultMode != nil {
			mode = *v.Secret.DefaultMode
		}
		if mode&0o004 == 0 && (sc.FSGroup == nil || mode&0o040 == 0) {
			c.fail(src, "volume %s: mode %#o with fsGroup %v is unreadable by user %d", v.Name, mode, sc.FSGroup, *sc.RunAsUser)
		}
	}
}

func (c *checker) checkContainer(src string, ct corev1.Container, podNonRoot bool, imageNames map[string]bool) {
	checkImage(c, src, ct.Image, imageNames)
	req, lim := ct.Resources.Requests, ct.Resources.Limits
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := req[r]
		if !ok || q.IsZero() {
			c.fail(src, "no %s request", r)
		}
		if l, ok := lim[r]; ok && l.Cmp(q) < 0 {
			c.fail(src, "%s limit %s below its request %s", r, l.String(), q.String())
		}
	}
	if _, ok := lim[corev1.ResourceMemory]; !ok {
		c.fail(src, "no memory limit")
	}
	seen := map[string]bool{}
	for _, p := range ct.Ports {
		if p.Name == "" {
			c.fail(src, "port %d/%s has no name", p.ContainerPort, p.Protocol)
		}
		for _, e := range validation.IsValidPortName(p.Name) {
			c.fail(src, "port name %q: %s", p.Name, e)
		}
		if seen[p.Name] {
			c.fail(src, "port name %q used twice", p.Name)
		}
		seen[p.Name] = true
		if p.Protocol == "" {
			c.fail(src, "port %s: protocol not stated", p.Name)
		}
	}
	for what, pr := range map[string]*corev1.Probe{"readiness": ct.ReadinessProbe, "liveness": ct.LivenessProbe, "startup": ct.StartupProbe} {
		if pr == nil {
			continue
		}
		var port *intstr.IntOrString
		if pr.TCPSocket != nil {
			port = &pr.TCPSocket.Port
		} else if pr.HTTPGet != nil {
			port = &pr.HTTPGet.Port
		}
		if port != nil && port.Type == intstr.String && !hasPort(ct, port.StrVal, corev1.ProtocolTCP) {
			c.fail(src, "%s probe names port %q, which is no TCP port of the container", what, port.StrVal)
		}
	}
	sc := ct.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.fail(src, "allowPrivilegeEscalation must be false")
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		c.fail(src, "readOnlyRootFilesystem must be true")
	}
	if !podNonRoot && (sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
		c.fail(src, "runAsNonRoot must be true")
	}
}

// checkImage: set and pinned (a tag other than latest, or a digest).
func checkImage(c *checker, src, image string, imageNames map[string]bool) {
	if image == "" {
		c.fail(src, "no image")
		return
	}
	name, tag := image, ""
	if i := strings.Index(image, "@"); i >= 0 {
		name, tag = image[:i], image[i:]
	} else if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		name, tag = image[:i], image[i+1:]
	}
	imageNames[name] = true
	if tag == "" || tag == "latest" {
		c.fail(src, "image %q is not pinned to a tag or digest", image)
	}
}

func hasPort(ct corev1.Container, name string, proto corev1.Protocol) bool {
	for _, p := range ct.Ports {
		if p.Name == name && (p.Protocol == proto || (p.Protocol == "" && proto == corev1.ProtocolTCP)) {
			return true
		}
	}
	return false
}

// checkService: a selector that selects some pod template, named ports with
// a protocol, and a target port each selected pod has with that protocol.
func (c *checker) checkService(src string, s *corev1.Service, loads []workload) {
	src += " Service/" + s.Name
	if len(s.Spec.Selector) == 0 {
		c.fail(src, "no selector")
		return
	}
	sel := labels.SelectorFromSet(s.Spec.Selector)
	var pods []workload
	for _, w := range loads {
		if w.kind != "Job" && w.kind != "Pod" && sel.Matches(labels.Set(w.tmpl.Labels)) {
			pods = append(pods, w)
		}
	}
	if len(pods) == 0 {
		c.fail(src, "selector %s matches no workload's pods", sel)
	}
	for _, p := range s.Spec.Ports {
		if p.Name == "" {
			c.fail(src, "port %d has no name", p.Port)
		}
		if p.Protocol == "" {
			c.fail(src, "port %s: protocol not stated", p.Name)
		}
		for _, w := range pods {
			if !targets(w.tmpl.Spec, p) {
				c.fail(src, "port %s (%s) reaches no %s port of %s/%s", p.Name, p.TargetPort.String(), p.Protocol, w.kind, w.name)
			}
		}
	}
}

func targets(spec corev1.PodSpec, sp corev1.ServicePort) bool {
	t := sp.TargetPort
	if t.Type == intstr.Int && t.IntVal == 0 {
		t = intstr.FromInt32(sp.Port) // unset: the port itself
	}
	for _, ct := range spec.Containers {
		for _, p := range ct.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if proto != sp.Protocol {
				continue
			}
			if (t.Type == intstr.String && p.Name == t.StrVal) || (t.Type == intstr.Int && p.ContainerPort == t.IntVal) {
				return true
			}
		}
	}
	return false
}

// checkPolicy: the policy and each of its pod peers select some workload's
// pods (a typo there would silently cut a path or guard nothing).
func (c *checker) checkPolicy(src string, p *networkingv1.NetworkPolicy, loads []workload) {
	src += " NetworkPolicy/" + p.Name
	selects := func(ls *metav1.LabelSelector) bool {
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return false
		}
		for _, w := range loads {
			if sel.Matches(labels.Set(w.tmpl.Labels)) {
				return true
			}
		}
		return false
	}
	if len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.PodSelector.MatchExpressions) == 0 {
		c.fail(src, "empty podSelector (applies to every pod in the namespace)")
	} else if !selects(&p.Spec.PodSelector) {
		c.fail(src, "podSelector matches no workload's pods")
	}
	for _, rule := range p.Spec.Ingress {
		for _, peer := range rule.From {
			if peer.PodSelector != nil && peer.NamespaceSelector == nil && !selects(peer.PodSelector) {
				c.fail(src, "ingress peer %v matches no workload's pods", peer.PodSelector.MatchLabels)
			}
		}
	}
}
