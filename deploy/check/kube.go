package main

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization that these manifests use. Decoded strictly: a field the
// checker does not know is reported, so that a new one is checked here before it is relied on.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images"`
}

// manifests holds the decoded objects, by kind; several of a kind are a problem.
type manifests struct {
	namespaces      []*corev1.Namespace
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	budgets         []*policyv1.PodDisruptionBudget
	serviceMonitors []*monitoringv1.ServiceMonitor
	secrets         []*corev1.Secret // from *.example.yaml: the shape the referenced Secrets must have
	files           map[any]string   // the file each object came from
}

var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeFile decodes every document of a YAML file into the typed object its apiVersion and kind name.
func decodeFile(path string, m *manifests, p *problems) int {
	data, err := os.ReadFile(path)
	if err != nil {
		p.add(path, "%v", err)
		return 0
	}
	n := 0
	for i, doc := range separator.Split(string(data), -1) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			p.add(path, "document %d: %v", i+1, err)
			continue
		}
		if meta.APIVersion == "" && meta.Kind == "" {
			continue // only comments
		}
		// The typed object the kind decodes into, and where it goes once decoded.
		var obj any
		var keep func()
		switch meta.APIVersion + " " + meta.Kind {
		case "v1 Namespace":
			o := &corev1.Namespace{}
			obj, keep = o, func() { m.namespaces = append(m.namespaces, o) }
		case "apps/v1 Deployment":
			o := &appsv1.Deployment{}
			obj, keep = o, func() { m.deployments = append(m.deployments, o) }
		case "v1 Service":
			o := &corev1.Service{}
			obj, keep = o, func() { m.services = append(m.services, o) }
		case "policy/v1 PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			obj, keep = o, func() { m.budgets = append(m.budgets, o) }
		case "monitoring.coreos.com/v1 ServiceMonitor":
			o := &monitoringv1.ServiceMonitor{}
			obj, keep = o, func() { m.serviceMonitors = append(m.serviceMonitors, o) }
		case "v1 Secret":
			o := &corev1.Secret{}
			obj, keep = o, func() { m.secrets = append(m.secrets, o) }
		default:
			p.add(path, "document %d: %s %q is not a kind this checker knows", i+1, meta.APIVersion, meta.Kind)
			continue
		}
		// Strict: an unknown field (a typo, a field at the wrong level) or a duplicated one is an error, as
		// `kubectl apply --validate=strict` makes it on a server.
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			p.add(path, "document %d (%s): %v", i+1, meta.Kind, err)
			continue
		}
		keep()
		m.files[obj] = path
		n++
	}
	return n
}

func checkKubernetes(dir string, p *problems) int {
	kfile := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(kfile)
	if err != nil {
		p.add(kfile, "%v", err)
		return 0
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		p.add(kfile, "%v", err)
		return 0
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		p.add(kfile, "apiVersion/kind %s/%s, expected kustomize.config.k8s.io/v1beta1 Kustomization", k.APIVersion, k.Kind)
	}
	m := &manifests{files: map[any]string{}}
	n := 0
	listed := map[string]bool{"kustomization.yaml": true}
	for _, r := range k.Resources {
		path := filepath.Join(dir, r)
		if strings.Contains(r, "://") || filepath.IsAbs(r) || strings.HasPrefix(filepath.Clean(r), "..") {
			p.add(kfile, "resource %q is not a file beside it", r)
			continue
		}
		if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
			p.add(kfile, "resource %q: no such file", r)
			continue
		}
		listed[filepath.Clean(r)] = true
		n += decodeFile(path, m, p)
	}
	// Every manifest beside it is applied, or is an example (decoded and cross-checked, never applied).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") || listed[name] {
			continue
		}
		if strings.HasSuffix(name, ".example.yaml") {
			n += decodeFile(filepath.Join(dir, name), m, p)
			continue
		}
		p.add(filepath.Join(dir, name), "not listed in kustomization.yaml's resources (name it *.example.yaml if it is not applied)")
	}

	one := func(kind string, count int) bool {
		if count != 1 {
			p.add(dir, "%d %s objects, expected one", count, kind)
		}
		return count == 1
	}
	if !one("Deployment", len(m.deployments)) || !one("Service", len(m.services)) ||
		!one("PodDisruptionBudget", len(m.budgets)) || !one("ServiceMonitor", len(m.serviceMonitors)) {
		return n
	}
	d, svc, pdb, sm := m.deployments[0], m.services[0], m.budgets[0], m.serviceMonitors[0]
	refs := checkDeployment(m.files[d], d, &k, p)
	checkService(m.files[svc], svc, d, p)
	checkBudget(m.files[pdb], pdb, d, p)
	refs = append(refs, checkServiceMonitor(m.files[sm], sm, svc, p)...)
	if len(m.namespaces) > 0 {
		ns := m.namespaces[0]
		if k.Namespace != "" && ns.Name != k.Namespace {
			p.add(m.files[ns], "Namespace %q, but kustomization.yaml puts everything in %q", ns.Name, k.Namespace)
		}
		if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			p.add(m.files[ns], "pod-security.kubernetes.io/enforce is %q, expected restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
		}
	}
	checkSecrets(m, refs, p)
	return n
}

// secretRef is a key of a Secret that the manifests read.
type secretRef struct {
	file, what, name, key string
}

func checkDeployment(file string, d *appsv1.Deployment, k *kustomization, p *problems) []secretRef {
	var refs []secretRef
	if r := d.Spec.Replicas; r == nil || *r < 2 || *r > 3 {
		p.add(file, "replicas not 2 or 3 (docs/operations.md: enough to lose one, more add no safety)")
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || sel.Empty() || !sel.Matches(podLabels) {
		p.add(file, "spec.selector does not select the pod template's labels %v", podLabels)
	}
	pod := d.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil {
		p.add(file, "no pod securityContext")
		psc = &corev1.PodSecurityContext{}
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		p.add(file, "pod securityContext.runAsNonRoot is not true")
	}
	if psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		p.add(file, "pod securityContext.runAsUser is not a non-zero UID")
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		p.add(file, "pod securityContext.seccompProfile is not RuntimeDefault")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		p.add(file, "automountServiceAccountToken is not false (the server calls no Kubernetes API)")
	}
	if len(pod.TopologySpreadConstraints) == 0 {
		p.add(file, "no topologySpreadConstraints: replicas may land on one node")
	}
	for i, c := range pod.TopologySpreadConstraints {
		if sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil || sel.Empty() || !sel.Matches(podLabels) {
			p.add(file, "topologySpreadConstraints[%d] does not select the pods", i)
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
		// A volume of its own per replica would hold an SQLite file per replica: replicas front one network store.
		if v.EmptyDir != nil || v.PersistentVolumeClaim != nil || v.HostPath != nil || v.Ephemeral != nil {
			p.add(file, "volume %q is writable storage: replicas must share one network store, not a file each", v.Name)
		}
	}
	if len(pod.Containers) != 1 {
		p.add(file, "%d containers, expected one", len(pod.Containers))
		return refs
	}
	c := pod.Containers[0]
	images := []string{}
	for _, img := range k.Images {
		images = append(images, img.Name)
	}
	if !slices.Contains(images, c.Image) {
		p.add(file, "image %q is not one kustomization.yaml's images: sets (%v)", c.Image, images)
	}
	csc := c.SecurityContext
	if csc == nil {
		p.add(file, "container %s: no securityContext", c.Name)
		csc = &corev1.SecurityContext{}
	}
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
		p.add(file, "container %s: readOnlyRootFilesystem is not true", c.Name)
	}
	if csc.RunAsNonRoot == nil || !*csc.RunAsNonRoot {
		p.add(file, "container %s: runAsNonRoot is not true", c.Name)
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		p.add(file, "container %s: allowPrivilegeEscalation is not false", c.Name)
	}
	if csc.Privileged != nil && *csc.Privileged {
		p.add(file, "container %s: privileged", c.Name)
	}
	if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") || len(csc.Capabilities.Add) > 0 {
		p.add(file, "container %s: capabilities must drop ALL and add none", c.Name)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		p.add(file, "container %s: set cpu and memory requests and a memory limit", c.Name)
	}
	ports := map[string]int32{}
	var containerPort int32
	for _, cp := range c.Ports {
		ports[cp.Name] = cp.ContainerPort
		containerPort = cp.ContainerPort
	}
	if len(c.Ports) != 1 || containerPort != 7468 {
		p.add(file, "container %s: expected the one port 7468", c.Name)
	}
	probe := func(what string, pr *corev1.Probe, path string) {
		if pr == nil || pr.HTTPGet == nil {
			p.add(file, "container %s: no HTTP %s probe", c.Name, what)
			return
		}
		if pr.HTTPGet.Path != path {
			p.add(file, "container %s: %s probe on %q, expected %s", c.Name, what, pr.HTTPGet.Path, path)
		}
		if port := resolvePort(pr.HTTPGet.Port, ports); port != containerPort {
			p.add(file, "container %s: %s probe on port %s, which is not the server's port", c.Name, what, pr.HTTPGet.Port.String())
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")
	if c.StartupProbe != nil {
		probe("startup", c.StartupProbe, "/healthz")
	}

	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if store, ok := env["COSID_STORE"]; !ok || store.ValueFrom == nil || store.ValueFrom.SecretKeyRef == nil {
		p.add(file, "container %s: COSID_STORE must come from a Secret (secretKeyRef): the URL carries a password", c.Name)
	} else {
		ref := store.ValueFrom.SecretKeyRef
		refs = append(refs, secretRef{file, "COSID_STORE", ref.Name, ref.Key})
	}
	if listen := env["COSID_SERVE_LISTEN"].Value; listen != fmt.Sprintf("0.0.0.0:%d", containerPort) && listen != fmt.Sprintf("[::]:%d", containerPort) {
		p.add(file, "container %s: COSID_SERVE_LISTEN %q, expected 0.0.0.0:%d (the default is loopback only)", c.Name, listen, containerPort)
	}

	// The token file: a flag or COSID_SERVE_TOKEN_FILE, inside a read-only mount of a Secret.
	tokenFile := env["COSID_SERVE_TOKEN_FILE"].Value
	for i, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--token-file="); ok {
			tokenFile = v
		} else if a == "--token-file" && i+1 < len(c.Args) {
			tokenFile = c.Args[i+1]
		}
	}
	if tokenFile == "" {
		p.add(file, "container %s: no --token-file: without tokens every client may do anything", c.Name)
	} else {
		found := false
		for _, vm := range c.VolumeMounts {
			if filepath.Dir(tokenFile) != filepath.Clean(vm.MountPath) {
				continue
			}
			found = true
			v, ok := volumes[vm.Name]
			if !ok || v.Secret == nil || !vm.ReadOnly {
				p.add(file, "container %s: the token file %s must be in a read-only mount of a Secret", c.Name, tokenFile)
			} else {
				refs = append(refs, secretRef{file, "--token-file", v.Secret.SecretName, filepath.Base(tokenFile)})
			}
		}
		if !found {
			p.add(file, "container %s: no volume mounted at %s for the token file", c.Name, filepath.Dir(tokenFile))
		}
	}
	return refs
}

// resolvePort gives the number of a named or numbered port (0 when unknown).
func resolvePort(port intstr.IntOrString, named map[string]int32) int32 {
	if port.Type == intstr.String {
		return named[port.StrVal]
	}
	return port.IntVal
}

func checkService(file string, svc *corev1.Service, d *appsv1.Deployment, p *problems) {
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		p.add(file, "selector %v does not select the Deployment's pods", svc.Spec.Selector)
	}
	named := map[string]int32{}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, cp := range c.Ports {
			named[cp.Name] = cp.ContainerPort
		}
	}
	for _, sp := range svc.Spec.Ports {
		target := sp.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(sp.Port)
		}
		if port := resolvePort(target, named); port == 0 || !slices.Contains(slices.Collect(maps.Values(named)), port) {
			p.add(file, "port %q: targetPort %s is not a port of the Deployment's container", sp.Name, target.String())
		}
	}
}

func checkBudget(file string, pdb *policyv1.PodDisruptionBudget, d *appsv1.Deployment, p *problems) {
	if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		p.add(file, "selector does not select the Deployment's pods")
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	switch {
	case pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.Type == intstr.Int:
		if v := pdb.Spec.MaxUnavailable.IntVal; v < 1 || v >= replicas {
			p.add(file, "maxUnavailable %d with %d replicas: drains either block or take every replica", v, replicas)
		}
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		if v := pdb.Spec.MinAvailable.IntVal; v < 1 || v >= replicas {
			p.add(file, "minAvailable %d with %d replicas: drains either block or take every replica", v, replicas)
		}
	case pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil:
		p.add(file, "neither maxUnavailable nor minAvailable")
	}
}

func checkServiceMonitor(file string, sm *monitoringv1.ServiceMonitor, svc *corev1.Service, p *problems) []secretRef {
	var refs []secretRef
	if sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector); err != nil || sel.Empty() || !sel.Matches(labels.Set(svc.Labels)) {
		p.add(file, "selector does not select the Service %q by its labels %v", svc.Name, svc.Labels)
	}
	if len(sm.Spec.Endpoints) == 0 {
		p.add(file, "no endpoints")
	}
	for i, ep := range sm.Spec.Endpoints {
		if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == ep.Port }) {
			p.add(file, "endpoints[%d]: port %q is not a named port of the Service", i, ep.Port)
		}
		if ep.Path != "/metrics" {
			p.add(file, "endpoints[%d]: path %q, expected /metrics", i, ep.Path)
		}
		// With tokens on, /metrics answers 401 without one.
		switch {
		case ep.Authorization != nil && ep.Authorization.Credentials != nil:
			if t := ep.Authorization.Type; t != "" && !strings.EqualFold(t, "Bearer") {
				p.add(file, "endpoints[%d]: authorization type %q, expected Bearer", i, t)
			}
			refs = append(refs, secretRef{file, "the metrics token", ep.Authorization.Credentials.Name, ep.Authorization.Credentials.Key})
		case ep.BearerTokenSecret != nil:
			refs = append(refs, secretRef{file, "the metrics token", ep.BearerTokenSecret.Name, ep.BearerTokenSecret.Key})
		default:
			p.add(file, "endpoints[%d]: no bearer token: /metrics needs one when tokens are on", i)
		}
	}
	return refs
}

// checkSecrets checks that each Secret key the manifests read is in the example Secrets, and that the metrics token
// is a token for every namespace (a line without a namespace) in the token file.
func checkSecrets(m *manifests, refs []secretRef, p *problems) {
	value := func(name, key string) (string, string, bool) {
		for _, s := range m.secrets {
			if s.Name != name {
				continue
			}
			if v, ok := s.StringData[key]; ok {
				return v, m.files[s], true
			}
			if v, ok := s.Data[key]; ok {
				return string(v), m.files[s], true
			}
		}
		return "", "", false
	}
	values := map[string]string{}
	for _, r := range refs {
		v, sfile, ok := value(r.name, r.key)
		if !ok {
			p.add(r.file, "%s reads key %q of Secret %q, which no *.example.yaml shows", r.what, r.key, r.name)
			continue
		}
		values[r.what] = v
		if r.what == "COSID_STORE" && (strings.HasPrefix(v, "sqlite:") || strings.HasPrefix(v, "memory:")) {
			p.add(sfile, "the store of several replicas is %q: it must be one network store they share", v)
		}
	}
	metrics, tokens := values["the metrics token"], values["--token-file"]
	if metrics == "" || tokens == "" {
		return
	}
	everyNamespace := false
	sc := bufio.NewScanner(strings.NewReader(tokens))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 1 && fields[0] == metrics {
			everyNamespace = true
		}
	}
	if !everyNamespace {
		p.add("secrets", "the metrics token is not a line of its own (every namespace) in the token file: /metrics would answer 401 or 403")
	}
	for _, line := range strings.Split(tokens, "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") && len(f[0]) < 16 {
			p.add("secrets", "token %q is shorter than 16 characters", f[0])
		}
	}
}
